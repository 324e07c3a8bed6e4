// Builds the example kernels with the C++ builder and prints each as IR text.
#include <cstdio>

#include "examples/kernels.h"
#include "primjit/ir/text.h"

int main() {
  namespace ex = primjit::examples;
  try {
    std::printf("%s\n", primjit::print(ex::vector_add_cpu(), "vector_add_cpu").c_str());
    std::printf("%s\n", primjit::print(ex::vector_add_cuda(), "vector_add_cuda").c_str());
    std::printf("%s\n", primjit::print(ex::row_softmax(), "row_softmax").c_str());
    std::printf("%s\n", primjit::print(ex::matmul_relu(), "matmul_relu").c_str());
  } catch (const primjit::Error& e) {
    std::fprintf(stderr, "primjit error: %s\n", e.what());
    return 1;
  }
  return 0;
}
