// Hostile: creates System V shared memory, a message queue and a semaphore
// set, and a POSIX message queue, none of which a grade's scratch cleanup
// sees (without an IPC namespace they outlive the grade). If any is created it
// throws, so the grade fails. The system-call filter refuses them in every
// mode: nothing is created, the result is correct, verdict passed.
#include "sdpa.h"

#include <fcntl.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace {

void try_ipc() {
  std::string made;
  if (int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600); id >= 0) {
    made += " shared memory";
    shmctl(id, IPC_RMID, nullptr);
  }
  if (int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600); id >= 0) {
    made += " message queue";
    msgctl(id, IPC_RMID, nullptr);
  }
  if (int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600); id >= 0) {
    made += " semaphores";
    semctl(id, 0, IPC_RMID);
  }
  if (mqd_t q = mq_open("/grader_probe", O_CREAT | O_RDWR, 0600, nullptr); q != (mqd_t)-1) {
    made += " POSIX queue";
    mq_close(q);
    mq_unlink("/grader_probe");
  }
  if (!made.empty()) throw std::runtime_error("created IPC objects:" + made);
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                       const torch::Tensor& key,
                                                                       const torch::Tensor& value,
                                                                       const torch::Tensor& mask) {
  try_ipc();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -INFINITY);
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
