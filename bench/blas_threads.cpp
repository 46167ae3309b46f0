// Whether the BLAS library LibTorch links is safe to call from several threads
// at once: each thread multiplies the same two n x n double matrices again and
// again (dgemm_, as LibTorch calls it) and counts the products that differ
// from one computed before any thread started. A safe library gives 0.
// Built and run by bench/blas_threads.sh.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

extern "C" void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
                       const double* beta, double* c, const int* ldc);

namespace {

void multiply(int n, const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& c) {
  const double one = 1, zero = 0;
  dgemm_("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, c.data(), &n);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 128;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 3000;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 3;
  std::mt19937_64 generator(1);
  std::uniform_real_distribution<double> uniform(-0.5, 0.5);
  std::vector<double> a(static_cast<size_t>(n) * n), b(a.size()), expected(a.size());
  for (auto& x : a) x = uniform(generator);
  for (auto& x : b) x = uniform(generator);
  multiply(n, a, b, expected);
  std::atomic<long> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<double> c(a.size());
      for (int i = 0; i < calls; ++i) {
        multiply(n, a, b, c);
        if (c != expected) ++wrong;
      }
    });
  }
  for (auto& worker : workers) worker.join();
  std::printf("n=%d: %ld of %d products wrong (%d threads)\n", n, wrong.load(), calls * threads, threads);
  return 0;
}
