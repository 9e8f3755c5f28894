/* The online allocator's claims, on a 1 MiB address space of its own: what a plan's range
 * takes out of best fit, what its intruders give it when freed, what unclaim gives back. */
#include "../harness.h"
#include "pa.h"
#include "treap.h"

#define KIB 1024u
#define SPACE (1024u * KIB)

size_t pa_pool_size(void) { return SPACE; }
/* The pool's pages (64K here) the mapped test marks; by default every page is mapped. */
static bool some_unmapped, page_mapped[SPACE / (64 * KIB)];
size_t pa_pool_unmapped(uint64_t off, uint64_t size) {
  size_t n = 0;
  for (uint64_t p = off / (64 * KIB); some_unmapped && p <= (off + size - 1) / (64 * KIB); p++) n += !page_mapped[p];
  return n;
}
PA_TLS int pa_slot; /* init.c's: one device here */

static uint64_t paged_at(uint64_t size, uint64_t page, uint32_t *node) {
  uint64_t off = UINT64_MAX;
  *node = pa_online_alloc(size, page, &off);
  return *node == PA_NIL ? UINT64_MAX : off;
}

static uint64_t alloc_at(uint64_t size, uint32_t *node) { return paged_at(size, 0, node); }

#define PAGE (64 * KIB)

/* A budget's pages (64K here) on the empty space: best fit, unless the buffer would span
 * more pages there than its size needs; then best fit from a page start, the bytes below
 * staying free. */
static void paged(void) {
  uint32_t x[7], none;
  CHECK_EQ_I64(alloc_at(KIB, &x[0]), 0);
  CHECK_EQ_I64(paged_at(PAGE, PAGE, &x[1]), PAGE); /* at 1K: 2 pages */
  CHECK_EQ_I64(pa_online_find(PAGE + 10), x[1]);
  CHECK_EQ_I64(pa_online_find(10 * KIB), PA_NIL); /* below it: free */
  CHECK_EQ_I64(alloc_at(8 * KIB, &x[2]), KIB);     /* best fit: [1K, 64K) */
  /* [9K, 73K) would span 2 pages, [128K, 192K) 1 */
  CHECK_EQ_I64(paged_at(PAGE, PAGE, &x[3]), 2 * PAGE);
  /* under a page: best fit ([9K, 64K) is too small) */
  CHECK_EQ_I64(paged_at(60 * KIB, PAGE, &x[4]), 3 * PAGE);
  /* at 252K: [252K, 348K) would span 3 pages; [256K, 352K) spans 2 */
  CHECK_EQ_I64(paged_at(96 * KIB, PAGE, &x[5]), 4 * PAGE);
  CHECK_EQ_I64(pa_online_find(4 * PAGE - KIB), PA_NIL);
  /* under a page, across a page boundary all the same: [352K, 412K) */
  CHECK_EQ_I64(paged_at(60 * KIB, PAGE, &x[6]), 352 * KIB);
  CHECK_EQ_I64(paged_at(SPACE, PAGE, &none), UINT64_MAX);
  for (int i = 0; i < 7; i++) pa_online_free(x[i]);
  CHECK_EQ_I64(alloc_at(SPACE, &x[0]), 0); /* all coalesced again */
  pa_online_free(x[0]);
}

/* x[0..5) at [0, 324K) with holes [8K, 108K) and [116K, 316K), every page unmapped
 * until a test marks some mapped. */
static void two_holes(uint32_t x[5]) {
  uint64_t sizes[5] = {8 * KIB, 100 * KIB, 8 * KIB, 200 * KIB, 8 * KIB};
  for (int i = 0; i < 5; i++) alloc_at(sizes[i], &x[i]);
  pa_online_free(x[1]), pa_online_free(x[3]);
  some_unmapped = true;
}

/* two_holes undone: every page mapped again, the space whole. */
static void fill_holes(uint32_t x[5]) {
  uint32_t y;
  memset(page_mapped, 0, sizeof page_mapped);
  some_unmapped = false;
  for (int i = 0; i < 5; i++)
    if (i != 1 && i != 3) pa_online_free(x[i]);
  CHECK_EQ_I64(alloc_at(SPACE, &y), 0); /* all coalesced again */
  pa_online_free(y);
}

/* Without a budget, best fit on mapped pages: of the smallest holes that fit, the start or
 * end that maps no page anew (best fit alone took the hole on unmapped pages, and its
 * handles came from idle pages elsewhere: an unmap and a map each). */
static void mapped(void) {
  uint32_t x[5], y;
  two_holes(x);
  for (int p = 2; p <= 4; p++) page_mapped[p] = true; /* [128K, 320K) */
  CHECK_EQ_I64(alloc_at(64 * KIB, &y), 252 * KIB); /* the larger hole's end: pages 3 and 4 */
  pa_online_free(y);
  for (int p = 2; p <= 4; p++) page_mapped[p] = false;
  CHECK_EQ_I64(alloc_at(64 * KIB, &y), 8 * KIB); /* all alike: best fit */
  pa_online_free(y);
  fill_holes(x);
}

/* Under a budget, on mapped pages too: of the smallest holes that fit, the start spanning
 * the fewest pages, then the one that maps the fewest anew (best fit from a page start
 * alone took unmapped pages, whose handles came from idle pages elsewhere). */
static void paged_mapped(void) {
  uint32_t x[5], y;
  two_holes(x);
  for (int p = 0; p <= 4; p++) page_mapped[p] = true; /* [0, 320K) */
  CHECK_EQ_I64(paged_at(30 * KIB, PAGE, &y), 8 * KIB); /* all alike: best fit */
  pa_online_free(y);
  page_mapped[0] = false;
  CHECK_EQ_I64(paged_at(30 * KIB, PAGE, &y), 78 * KIB); /* the hole's end: page 1 */
  pa_online_free(y);
  page_mapped[1] = false;
  /* the larger hole's end (page 4); its start [116K, 146K) spans pages 1 and 2 */
  CHECK_EQ_I64(paged_at(30 * KIB, PAGE, &y), 286 * KIB);
  pa_online_free(y);
  page_mapped[4] = false;
  CHECK_EQ_I64(paged_at(30 * KIB, PAGE, &y), 8 * KIB); /* a page anew wherever (the top block's too): best fit */
  pa_online_free(y);
  /* a page: [128K, 192K) spans one page, unmapped; [8K, 72K) two, mapped */
  page_mapped[0] = page_mapped[1] = true, page_mapped[2] = false;
  CHECK_EQ_I64(paged_at(PAGE, PAGE, &y), 2 * PAGE);
  pa_online_free(y);
  fill_holes(x);
}

/* A plan's range opened to best fit and claimed again, as the front does when the program
 * leaves its plan and comes back: the plan's live buffers (claimed space, no blocks) are
 * taken out of the claim first, so that best fit around them never lies over them. */
static void open_and_close(void) {
  uint32_t i, s1, s2, f, g, y;
  CHECK_EQ_I64(alloc_at(64 * KIB, &i), 0);       /* the recording's last buffer */
  CHECK(pa_online_claim(0, 256 * KIB));          /* it intrudes */
  pa_online_free(i);                             /* [0, 64K) joins the claim: a claimed block of its own */
  /* a slot over [32K, 96K) spans that block and the claim's next: taken whole */
  CHECK((s1 = pa_online_take(32 * KIB, 64 * KIB)) != PA_NIL);
  CHECK_EQ_I64(pa_online_find(40 * KIB), s1);
  CHECK_EQ_I64(pa_online_find(90 * KIB), s1);
  CHECK((s2 = pa_online_take(160 * KIB, 32 * KIB)) != PA_NIL);
  CHECK_EQ_I64(pa_online_take(80 * KIB, 32 * KIB), PA_NIL); /* s1 is there */
  /* open: best fit has the range around the two, and never their space */
  pa_online_unclaim(0, 256 * KIB);
  CHECK_EQ_I64(pa_online_intruders(), 0);
  CHECK_EQ_I64(alloc_at(32 * KIB, &f), 0);
  CHECK_EQ_I64(alloc_at(48 * KIB, &g), 96 * KIB);
  /* a slot's place while open: free space only */
  CHECK_EQ_I64(pa_online_reserve(100 * KIB, 8 * KIB), PA_NIL); /* g */
  CHECK_EQ_I64(pa_online_reserve(140 * KIB, 32 * KIB), PA_NIL); /* up to s2 */
  CHECK((y = pa_online_reserve(144 * KIB, 16 * KIB)) != PA_NIL);
  CHECK_EQ_I64(pa_online_find(150 * KIB), y);
  /* closed again: what lies there intrudes; the slots' space goes back to the claim as
   * each leaves, the others' too */
  CHECK(pa_online_claim(0, 256 * KIB));
  CHECK_EQ_I64(pa_online_intruders(), 5);
  pa_online_free(s1), pa_online_free(f), pa_online_free(g), pa_online_free(y), pa_online_free(s2);
  CHECK_EQ_I64(pa_online_intruders(), 0);
  CHECK_EQ_I64(alloc_at(16 * KIB, &f), 256 * KIB); /* nothing below: all claimed */
  CHECK((s1 = pa_online_take(0, 256 * KIB)) != PA_NIL); /* the claimed blocks join for a take */
  pa_online_free(s1);
  pa_online_unclaim(0, 256 * KIB);
  pa_online_free(f);
  CHECK_EQ_I64(alloc_at(SPACE, &f), 0);
  pa_online_free(f);
}

int main(void) {
  uint32_t a, b, c, d, e;
  /* best fit from an empty space packs from the bottom: a [0,64K) b [64K,128K) c [128K,192K) */
  CHECK_EQ_I64(alloc_at(64 * KIB, &a), 0);
  CHECK_EQ_I64(alloc_at(64 * KIB, &b), 64 * KIB);
  CHECK_EQ_I64(alloc_at(64 * KIB, &c), 128 * KIB);
  pa_online_free(b);
  /* the claim [32K, 256K) holds a's tail, b's hole, c and free space: a and c intrude */
  CHECK(pa_online_claim(32 * KIB, 256 * KIB));
  CHECK_EQ_I64(pa_online_intruders(), 2);
  CHECK(!pa_online_claim(200 * KIB, 300 * KIB)); /* overlaps a claim */
  CHECK_EQ_I64(pa_online_find(64 * KIB), PA_NIL); /* claimed space is no block */
  CHECK_EQ_I64(pa_online_find(130 * KIB), c);
  CHECK(pa_online_intrudes(100 * KIB, 140 * KIB)); /* c */
  CHECK(!pa_online_intrudes(64 * KIB, 128 * KIB)); /* b's hole, claimed */
  /* best fit no longer sees b's hole: 64K goes above the claim */
  CHECK_EQ_I64(alloc_at(64 * KIB, &d), 256 * KIB);
  /* c leaves: its block joins the claim, not best fit */
  pa_online_free(c);
  CHECK_EQ_I64(pa_online_intruders(), 1);
  CHECK(pa_online_intrudes(32 * KIB, 64 * KIB)); /* a's tail is still there */
  CHECK_EQ_I64(alloc_at(64 * KIB, &e), 320 * KIB);
  pa_online_free(e);
  /* a straddles the claim's start: its front [0, 32K) returns to best fit, the rest is claimed */
  pa_online_free(a);
  CHECK_EQ_I64(pa_online_intruders(), 0);
  CHECK(!pa_online_intrudes(32 * KIB, 256 * KIB));
  CHECK_EQ_I64(alloc_at(32 * KIB, &a), 0);
  CHECK_EQ_I64(alloc_at(16 * KIB, &e), 320 * KIB); /* nothing between 32K and 256K */
  pa_online_free(e);
  /* unclaim: the whole range serves best fit again, coalesced */
  pa_online_unclaim(32 * KIB, 256 * KIB);
  CHECK_EQ_I64(alloc_at(224 * KIB, &e), 32 * KIB);
  CHECK(pa_online_claim(512 * KIB, 600 * KIB)); /* another claim, after the first went */
  CHECK_EQ_I64(pa_online_intruders(), 0);
  pa_online_unclaim(512 * KIB, 600 * KIB);
  /* g straddles a claim's start, h its end: h freed, its inside joins the claim and its
   * tail goes back to best fit (the next allocation lands there, not past h's end) */
  uint32_t g, h, k;
  CHECK_EQ_I64(alloc_at(128 * KIB, &g), 320 * KIB);
  CHECK_EQ_I64(alloc_at(128 * KIB, &h), 448 * KIB);
  CHECK(pa_online_claim(400 * KIB, 500 * KIB));
  CHECK_EQ_I64(pa_online_intruders(), 2);
  pa_online_free(h);
  CHECK_EQ_I64(pa_online_intruders(), 1);
  CHECK(!pa_online_intrudes(448 * KIB, 500 * KIB));
  CHECK(pa_online_intrudes(400 * KIB, 448 * KIB)); /* g */
  CHECK_EQ_I64(alloc_at(76 * KIB, &k), 500 * KIB);
  CHECK_EQ_I64(pa_online_find(470 * KIB), PA_NIL); /* h's inside: claimed, no block */
  /* everything goes: one free block again */
  pa_online_free(g);
  pa_online_unclaim(400 * KIB, 500 * KIB);
  pa_online_free(a), pa_online_free(d), pa_online_free(e), pa_online_free(k);
  CHECK_EQ_I64(alloc_at(SPACE, &a), 0);
  pa_online_free(a);
  paged();
  open_and_close();
  mapped();
  paged_mapped();
  return test_report("test_online");
}
