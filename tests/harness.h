/* Minimal test harness (mimalloc's test-api style): CHECK records a failure and goes
 * on; main returns nonzero if anything failed. */
#ifndef PLANALLOC_TEST_HARNESS_H
#define PLANALLOC_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

static int test_failures, test_checks;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    test_checks++;                                                                   \
    if (!(cond)) {                                                                   \
      test_failures++;                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
    }                                                                                \
  } while (0)

#define CHECK_EQ_I64(a, b)                                                           \
  do {                                                                               \
    long long a_ = (long long)(a), b_ = (long long)(b);                              \
    test_checks++;                                                                   \
    if (a_ != b_) {                                                                  \
      test_failures++;                                                               \
      fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
              #a, a_, #b, b_);                                                       \
    }                                                                                \
  } while (0)

#define CHECK_STR(a, b)                                                              \
  do {                                                                               \
    const char *a_ = (a), *b_ = (b);                                                 \
    test_checks++;                                                                   \
    if (strcmp(a_, b_)) {                                                            \
      test_failures++;                                                               \
      fprintf(stderr, "%s:%d: got \"%s\"\n    expected \"%s\"\n", __FILE__, __LINE__, \
              a_, b_);                                                               \
    }                                                                                \
  } while (0)

static inline int test_report(const char *name) {
  printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
  return test_failures ? 1 : 0;
}

#endif
