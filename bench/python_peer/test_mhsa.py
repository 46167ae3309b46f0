"""pytest checks equivalent to the grader's for exercise_mhsa: shapes over
several configurations, float64 and float32 numerics against PyTorch's
multi_head_attention_forward, dropout in training and eval mode, gradients."""
import pytest
import torch
import torch.nn.functional as F

from mhsa import MultiHeadSelfAttention

CONFIGS = [(2, 5, 16, 4), (1, 1, 8, 1), (3, 7, 32, 8), (2, 4, 12, 3)]  # B, N, D, H


def reference(module, x):
    """PyTorch's own multi-head attention with the module's weights."""
    w = torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight])
    b = torch.cat([module.q_proj.bias, module.k_proj.bias, module.v_proj.bias])
    xt = x.transpose(0, 1)  # (N, B, D)
    out, _ = F.multi_head_attention_forward(
        xt, xt, xt, module.dim, module.num_heads, w, b, None, None, False, 0.0,
        module.out_proj.weight, module.out_proj.bias, training=False, need_weights=False)
    return out.transpose(0, 1)


@pytest.mark.parametrize("B,N,D,H", CONFIGS)
def test_shape(B, N, D, H):
    module = MultiHeadSelfAttention(D, H).eval()
    assert module(torch.randn(B, N, D)).shape == (B, N, D)


@pytest.mark.parametrize("B,N,D,H", CONFIGS)
def test_float64_matches_reference(B, N, D, H):
    torch.manual_seed(0)
    module = MultiHeadSelfAttention(D, H).double().eval()
    x = torch.randn(B, N, D, dtype=torch.float64)
    torch.testing.assert_close(module(x), reference(module, x), rtol=1e-6, atol=1e-7)


def test_float32_matches_reference():
    torch.manual_seed(1)
    module = MultiHeadSelfAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    out = module(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, reference(module, x), rtol=1e-4, atol=1e-5)


def test_dropout_in_training_only():
    torch.manual_seed(2)
    module = MultiHeadSelfAttention(16, 4, dropout=0.5).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    module.train()
    a, b = module(x), module(x)
    assert not torch.allclose(a, b)
    module.eval()
    torch.testing.assert_close(module(x), reference(module, x), rtol=1e-6, atol=1e-7)


def test_gradients_match_reference():
    torch.manual_seed(3)
    module = MultiHeadSelfAttention(16, 4).double().eval()
    x = torch.randn(2, 5, 16, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(2, 5, 16, dtype=torch.float64)
    (g_x,) = torch.autograd.grad(module(x), x, grad_out)
    (r_x,) = torch.autograd.grad(reference(module, x), x, grad_out)
    torch.testing.assert_close(g_x, r_x, rtol=1e-6, atol=1e-7)


def test_refuses_indivisible_dim():
    with pytest.raises(ValueError):
        MultiHeadSelfAttention(10, 3)
