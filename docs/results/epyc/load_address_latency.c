/* Load latency by address form (issue 23, run 18; crate mirror-atomic README, "The search loop"):
 * a pointer chase over 64 nodes in L1, the same chain (load, and) with five address forms.
 * Build and run: gcc -O2 load_address_latency.c -o /tmp/lal && /tmp/lal [hops]
 * Prints ns per hop (thread CPU time) for each form, 3 times. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* NAME(mem, hops): one chase of `hops` hops from offset 0, timed. BASE is the register the
 * start address is moved to, HOP the instructions of one hop (the offset is %0), the rest the
 * registers they use. */
#define CHASE(NAME, BASE, HOP, ...)                                                   \
  static double NAME(uint64_t *mem, long hops) {                                     \
    uint64_t off = 0;                                                               \
    double t0 = now();                                                              \
    __asm__ volatile("mov %%rdi, %%" #BASE "\n\t"                                   \
                     "1: " HOP "\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"              \
                     : "+r"(off), "+r"(hops) : "D"(mem) : __VA_ARGS__, "cc", "memory"); \
    return now() - t0;                                                              \
  }

/* [base + index]: no displacement byte (any base but rbp and r13). */
CHASE(form_r12, r12, "mov (%%r12,%0), %0", "r12")
/* [r13 + index + 0]: r13 as base needs a displacement byte. */
CHASE(form_r13, r13, "mov 0(%%r13,%0), %0", "r13")
/* lea node = base + index, then [node] (what the list's kept loop does for the key). */
CHASE(form_lea, r15, "lea (%%r15,%0), %%r14\n\t mov (%%r14), %0", "r15", "r14")
/* [r11 + index + 8]: a real displacement. */
CHASE(form_disp, r11, "mov 8(%%r11,%0), %0", "r11")
/* [rbx + index]: another base register without displacement. */
CHASE(form_rbx, rbx, "mov (%%rbx,%0), %0", "rbx")

int main(int argc, char **argv) {
  long hops = argc > 1 ? atol(argv[1]) : 50000000;
  uint64_t *mem = aligned_alloc(64, 64 * 32);
  int perm[64];
  for (int i = 0; i < 64; i++) perm[i] = i;
  srand(1);
  for (int i = 63; i > 0; i--) {
    int j = rand() % (i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  /* 32-byte nodes; the next offset at +0 and again at +8 (for the displacement form). */
  for (int i = 0; i < 64; i++) {
    uint64_t next = (uint64_t)perm[(i + 1) % 64] * 32;
    mem[perm[i] * 4] = next;
    mem[perm[i] * 4 + 1] = next;
  }
  double (*forms[])(uint64_t *, long) = {form_r12, form_r13, form_lea, form_disp, form_rbx};
  const char *names[] = {"[r12+idx]", "[r13+idx+0]", "lea+[r14]", "[r11+idx+8]", "[rbx+idx]"};
  for (int rep = 0; rep < 3; rep++) {
    printf("ns/hop:");
    for (int f = 0; f < 5; f++) printf("  %s %.3f", names[f], forms[f](mem, hops) / hops * 1e9);
    printf("\n");
  }
  return 0;
}
