/* Cost of a write-back plus fence on this machine (DRAM, no NVMM): the bound it puts on a
 * persistent update. Build and run: gcc -O2 -mclwb -mclflushopt clwb_fence.c -o /tmp/cf && /tmp/cf
 * Prints cycles (TSC) per iteration; each loop runs 200,000 iterations over 64 rotating lines. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
static inline uint64_t rd(void) { unsigned a; return __rdtscp(&a); }
#define N 200000
#define LINE(i) ((volatile uint64_t *)(buf + 64 * ((i) % 64)))
int main(void) {
    char *buf = aligned_alloc(4096, 1 << 24);
    for (int i = 0; i < (1 << 24); i++) buf[i] = (char)i;
    uint64_t t;
    t = rd(); for (int i = 0; i < N; i++) { *LINE(i) = i; _mm_sfence(); }
    printf("store + sfence:                 %4lu cycles\n", (rd() - t) / N);
    t = rd(); for (int i = 0; i < N; i++) { *LINE(i) = i; _mm_clwb((void *)LINE(i)); }
    _mm_sfence();
    printf("store + clwb (no fence):        %4lu cycles\n", (rd() - t) / N);
    t = rd(); for (int i = 0; i < N; i++) { *LINE(i) = i; _mm_clwb((void *)LINE(i)); _mm_sfence(); }
    printf("store + clwb + sfence:          %4lu cycles\n", (rd() - t) / N);
    t = rd(); for (int i = 0; i < N; i++) { *LINE(i) = i; _mm_clwb((void *)LINE(i)); *LINE(i + 32) = i; _mm_clwb((void *)LINE(i + 32)); _mm_sfence(); }
    printf("2 x (store + clwb) + 1 sfence:  %4lu cycles\n", (rd() - t) / N);
    t = rd(); for (int i = 0; i < N; i++) { *LINE(i) = i; _mm_clwb((void *)LINE(i)); _mm_sfence(); *LINE(i + 32) = i; _mm_clwb((void *)LINE(i + 32)); _mm_sfence(); }
    printf("2 x (store + clwb + sfence):    %4lu cycles\n", (rd() - t) / N);
    volatile uint64_t *p = LINE(0);
    t = rd(); for (int i = 0; i < N; i++) { *p = i; _mm_clwb((void *)p); _mm_sfence(); (void)*p; }
    printf("same line, then reload it:      %4lu cycles (clwb evicts the line on this CPU)\n", (rd() - t) / N);
    return 0;
}
