// Google Benchmark entry point for the memhealth benchmarks (bench/*.cpp define benchmarks only).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
