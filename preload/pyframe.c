/* The Python line an allocation came from, for a Python program (issue #40): its C frames
 * are the framework's and end where every tensor's do (PyTorch: at::empty_strided), so
 * the report could not say which layer or line allocates. Read through the interpreter's
 * C API, found in the process by name (nothing links it), and only on a thread that holds
 * the GIL: a thread that released it (a ctypes.CDLL call, PyTorch's backward thread) may
 * not touch Python objects, and taking the GIL from inside a CUDA call could deadlock
 * against a thread that holds it and waits for us. The frame kept is the innermost one
 * outside the installed packages and the standard library: the user's own code. */
#include "pa.h"

#include <dlfcn.h>
#include <string.h>

#define PY_DEPTH 16 /* frames walked outward at most */

static struct {
  int (*initialized)(void);
  int (*gil_held)(void);
  void *(*frame)(void);            /* PyEval_GetFrame: borrowed */
  void *(*code)(void *frame);      /* PyFrame_GetCode: new reference */
  void *(*back)(void *frame);      /* PyFrame_GetBack: new reference */
  int (*line)(void *frame);
  void *(*attr)(void *o, const char *name); /* new reference */
  const char *(*utf8)(void *s);    /* borrowed */
  void (*decref)(void *o);
  void *(*err_occurred)(void); /* a pending exception: we do not touch it */
  void (*err_clear)(void);     /* ... nor leave one of ours (co_qualname before 3.11) */
  bool ready;
} py;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(const char *name) { return pa_real_dlsym()(RTLD_DEFAULT, name); }

static void resolve(void) {
  *(void **)&py.initialized = sym("Py_IsInitialized"), *(void **)&py.gil_held = sym("PyGILState_Check");
  *(void **)&py.frame = sym("PyEval_GetFrame"), *(void **)&py.code = sym("PyFrame_GetCode");
  *(void **)&py.back = sym("PyFrame_GetBack"), *(void **)&py.line = sym("PyFrame_GetLineNumber");
  *(void **)&py.attr = sym("PyObject_GetAttrString"), *(void **)&py.utf8 = sym("PyUnicode_AsUTF8");
  *(void **)&py.decref = sym("Py_DecRef");
  *(void **)&py.err_occurred = sym("PyErr_Occurred"), *(void **)&py.err_clear = sym("PyErr_Clear");
  py.ready = py.initialized && py.gil_held && py.frame && py.code && py.back && py.line && py.attr && py.utf8 &&
             py.decref && py.err_occurred && py.err_clear;
}

/* A string attribute of o, copied into out (n bytes); false if it has none. */
static bool text_attr(void *o, const char *name, char *out, size_t n) {
  void *s = py.attr(o, name);
  const char *t = s ? py.utf8(s) : NULL;
  if (t) snprintf(out, n, "%s", t);
  if (s) py.decref(s);
  if (!t) py.err_clear();
  return t != NULL;
}

/* Installed packages and the standard library are not the user's code. */
static bool library_file(const char *file) {
  return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") || strstr(file, "/lib/python3") ||
         file[0] == '<';
}

/* f's code: file, function and line into s; false if it has none. */
static bool describe(void *f, pa_site_t *s) {
  void *code = py.code(f);
  bool ok = code && text_attr(code, "co_filename", s->py_file, sizeof s->py_file) &&
            (text_attr(code, "co_qualname", s->py_func, sizeof s->py_func) ||
             text_attr(code, "co_name", s->py_func, sizeof s->py_func));
  if (code) py.decref(code);
  s->py_line = ok ? py.line(f) : -1;
  return ok;
}

/* The innermost frame outside the libraries, else the innermost (pa_mu not held). */
static void user_frame(pa_site_t *s) {
  void *f = py.frame(), *held = NULL; /* held: our reference to f, to drop */
  pa_site_t innermost = *s;
  for (int d = 0; f && d < PY_DEPTH; d++) {
    if (describe(f, s) && !library_file(s->py_file)) break;
    if (innermost.py_line < 0 && s->py_line >= 0) innermost = *s;
    s->py_line = -1;
    void *next = py.back(f);
    if (held) py.decref(held);
    f = held = next;
  }
  if (held) py.decref(held);
  if (s->py_line < 0) *s = innermost;
}

void pa_pyframe(pa_site_t *s) {
  s->py_line = -1;
  pthread_once(&once, resolve);
  if (!py.ready || !py.initialized() || !py.gil_held() || py.err_occurred()) return;
  user_frame(s);
  if (s->py_line < 0) return;
  for (const char *c = s->py_file; *c; c++) s->hash = pa_mix64(s->hash ^ (uint8_t)*c);
  s->hash = pa_mix64(s->hash ^ (uint64_t)s->py_line);
}
