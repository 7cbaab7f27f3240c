// Load latency by address form (issue 23, run 13; crate mirror-atomic README, "The search loop"): a pointer
// chase over 64 nodes in L1 with the same chain and five address forms. Build: gcc -O2 load_address_latency.c;
// run: ./a.out [hops]. Prints ns per hop (thread CPU time) for each form, 3 times.
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  long iters=argc>1?atol(argv[1]):50000000;
  uint64_t *mem=aligned_alloc(64,64*32);
  int perm[64]; for(int i=0;i<64;i++)perm[i]=i;
  srand(1); for(int i=63;i>0;i--){int j=rand()%(i+1);int t=perm[i];perm[i]=perm[j];perm[j]=t;}
  for(int i=0;i<64;i++){ mem[perm[i]*4]=(uint64_t)perm[(i+1)%64]*32; mem[perm[i]*4+1]=(uint64_t)perm[(i+1)%64]*32; }
  for(int rep=0;rep<3;rep++){
    uint64_t off=0; double t0=now();
    // form A: [base + index] (no displacement: base in a register other than rbp/r13)
    __asm__ volatile("mov %%rdi, %%r12\n\t"
      "1: mov (%%r12,%0), %0\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"
      : "+r"(off), "+r"(iters) : "D"(mem) : "r12","cc","memory");
    double ta=now()-t0; iters=argc>1?atol(argv[1]):50000000; off=0; t0=now();
    // form B: [base + index + 0] (r13 as base: the encoding needs a displacement byte)
    __asm__ volatile("mov %%rdi, %%r13\n\t"
      "1: mov 0(%%r13,%0), %0\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"
      : "+r"(off), "+r"(iters) : "D"(mem) : "r13","cc","memory");
    double tb=now()-t0; iters=argc>1?atol(argv[1]):50000000; off=0; t0=now();
    // form C: [node + 0] with node = base + index computed by lea (what the kept loop does for the key)
    __asm__ volatile("mov %%rdi, %%r12\n\t"
      "1: lea (%%r12,%0), %%r15\n\t mov (%%r15), %0\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"
      : "+r"(off), "+r"(iters) : "D"(mem) : "r12","r15","cc","memory");
    double tc=now()-t0; iters=argc>1?atol(argv[1]):50000000; off=0; t0=now();
    // form D: [r12 + index + 8] (a real displacement, base not r13)
    __asm__ volatile("mov %%rdi, %%r12\n\t"
      "1: mov 8(%%r12,%0), %0\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"
      : "+r"(off), "+r"(iters) : "D"(mem) : "r12","cc","memory");
    double td=now()-t0; iters=argc>1?atol(argv[1]):50000000; off=0; t0=now();
    // form E: [rbx + index] (another base register without displacement)
    __asm__ volatile("mov %%rdi, %%rbx\n\t"
      "1: mov (%%rbx,%0), %0\n\t and $-4, %0\n\t dec %1\n\t jnz 1b"
      : "+r"(off), "+r"(iters) : "D"(mem) : "rbx","cc","memory");
    double te=now()-t0; iters=argc>1?atol(argv[1]):50000000;
    printf("ns/hop: [r12+idx] %.3f  [r13+idx+0] %.3f  lea+[r15] %.3f  [r12+idx+8] %.3f  [rbx+idx] %.3f\n", ta/iters*1e9, tb/iters*1e9, tc/iters*1e9, td/iters*1e9, te/iters*1e9);
  }
  return 0;
}
