/* wf_bus.c - the one SIGBUS handler (wf_bus.h). */
#include "base/wf_bus.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__thread sigjmp_buf *wf_bus_jmp;

static __thread uintptr_t win_lo, win_hi;
static __thread volatile sig_atomic_t win_hit;
static uintptr_t page_size;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (win_hi > win_lo && a >= win_lo && a < win_hi) {
		uintptr_t from = a & ~(page_size - 1);
		/* mmap is a plain system call on Linux, safe here; the zero
		 * pages replace the file's in the caller's mapping, which the
		 * caller unmaps as a whole */
		if (mmap((void *)from, win_hi - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
		    MAP_FAILED) {
			win_hit = 1;
			return;
		}
	}
	if (wf_bus_jmp)
		siglongjmp(*wf_bus_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int catch_rc, catch_errno;

static void install(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	page_size = ps > 0 ? (uintptr_t)ps : 4096;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	catch_rc = sigaction(SIGBUS, &sa, NULL);
	catch_errno = errno;
}

int wf_bus_catch(void)
{
	pthread_once(&once, install);
	if (catch_rc != 0)
		errno = catch_errno;
	return catch_rc;
}

void wf_bus_window(const void *p, size_t len)
{
	win_hit = 0;
	win_lo = (uintptr_t)p;
	/* the end rounded up to a page: the mapping's last page is whole */
	uintptr_t ps = page_size ? page_size : 4096;
	win_hi = len ? ((uintptr_t)p + len + ps - 1) & ~(ps - 1) : (uintptr_t)p;
}

bool wf_bus_window_end(void)
{
	win_lo = win_hi = 0;
	bool hit = win_hit;
	win_hit = 0;
	return hit;
}
