/* The event log (PLANALLOC_EVENTS with PLANALLOC_DUMP): every allocation, free and launch
 * as it happens, with what planalloc did, in one file a user can send when the program
 * leaves its plan: PLANALLOC_DUMP/planalloc.<pid>.d<device>[.r<rank>].<seq>.events.csv,
 * "# planalloc events 2" on line 1 (2: time_us, the timeline's clock, last). Rows go
 * through a buffer of each device's, written when full and at exit; nothing allocates
 * after the first row. event_replay replays the file, planalloc report reads where the
 * run left its plan. */
#include "pa.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BUF (64 * 1024)

static struct {
  char *buf;
  size_t len;
  uint64_t seq;
  int fd; /* 0: not opened yet, -1: cannot be */
} PA_PER_DEVICE(evl);
PA_BIND(evl)
#define evl PA_THIS(evl)

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER; /* launches come without pa_mu */

bool pa_events_on(void) { return pa_opt.v[PA_OPT_EVENTS].i && pa_opt.v[PA_OPT_DUMP].text[0]; }

static void flush(void) {
  for (size_t done = 0; evl.fd > 0 && done < evl.len;) {
    ssize_t n = write(evl.fd, evl.buf + done, evl.len - done);
    if (n <= 0) {
      pa_warn("cannot write the events dump: it stops here");
      close(evl.fd), evl.fd = -1;
    }
    done += n > 0 ? (size_t)n : 0;
  }
  evl.len = 0;
}

static bool open_log(void) {
  char path[512];
  if (!pa_dump_dir()) return evl.fd = -1, false;
  pa_dump_path(path, sizeof path, "events.csv");
  evl.buf = malloc(BUF);
  evl.fd = evl.buf ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  if (evl.fd < 0) {
    pa_warn("cannot write the events dump %s: no event log", path);
    return evl.fd = -1, false;
  }
  static const char head[] = "# planalloc events 2\nseq,kind,thread,stream,ptr,size,site,did,pos,expected,want,time_us\n";
  memcpy(evl.buf, head, sizeof head - 1), evl.len = sizeof head - 1;
  return true;
}

static long thread_id(void) {
  static PA_TLS long tid;
  if (!tid) tid = syscall(SYS_gettid);
  return tid;
}

/* A position, or nothing. */
static int pos_text(char *out, size_t n, uint32_t pos) {
  return pos == PA_CLOCK_OFF ? snprintf(out, n, "%s", "") : snprintf(out, n, "%u", pos);
}

void pa_events_write(const pa_logged_t *e) {
  pthread_mutex_lock(&ev_mu);
  if (!evl.fd) open_log();
  if (evl.fd < 0) return (void)pthread_mutex_unlock(&ev_mu);
  if (evl.len + 256 > BUF) flush();
  char pos[16], expected[16], ptr[24] = "", site[24] = "", want[40] = "";
  pos_text(pos, sizeof pos, e->pos), pos_text(expected, sizeof expected, e->expected);
  if (e->kind != 'l') snprintf(ptr, sizeof ptr, "0x%llx", (unsigned long long)e->ptr);
  if (e->site) snprintf(site, sizeof site, "%016llx", (unsigned long long)e->site);
  if (e->expected != PA_CLOCK_OFF && e->want_size) snprintf(want, sizeof want, "a %llu", (unsigned long long)e->want_size);
  else if (e->expected != PA_CLOCK_OFF && e->want_mate != PA_CLOCK_OFF) snprintf(want, sizeof want, "f %u", e->want_mate);
  else if (e->expected != PA_CLOCK_OFF) snprintf(want, sizeof want, "f");
  int n = snprintf(evl.buf + evl.len, BUF - evl.len, "%llu,%c,%ld,0x%llx,%s,%llu,%s,%s,%s,%s,%s,%llu\n",
                   (unsigned long long)evl.seq++, e->kind, thread_id(), (unsigned long long)(uintptr_t)e->stream, ptr,
                   (unsigned long long)e->size, site, e->did ? e->did : "", pos, expected, want,
                   (unsigned long long)pa_run_us());
  if (n > 0 && (size_t)n < BUF - evl.len) evl.len += (size_t)n;
  pthread_mutex_unlock(&ev_mu);
}

void pa_events_close(void) {
  pthread_mutex_lock(&ev_mu);
  flush();
  if (evl.fd > 0) close(evl.fd), evl.fd = -1;
  pthread_mutex_unlock(&ev_mu);
}

void pa_events_zero(void) {
  pa_events_write(&(pa_logged_t){'a', NULL, 0, 0, 0, "pass", PA_CLOCK_OFF, PA_CLOCK_OFF, 0, PA_CLOCK_OFF});
}
