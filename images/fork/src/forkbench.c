/*
 * forkbench: the fork() workload of Hashim, "David vs. Goliath: Comparing Performance of fork()
 * in Raspberry Pis and Servers" (Edinburgh 2024), section 4.2.2, with the four experiment types
 * of 4.2.3 and the perf_event_open counters of 4.3.
 *
 * Per mapped size (MB) and repetition, each measuring process:
 *   1. pins itself to its start core (sched_setaffinity),
 *   2. mmap()s the size (MAP_PRIVATE | MAP_ANONYMOUS) and memset()s it,
 *   3. drops the page cache, dentries and inodes (sync; echo 3 > /proc/sys/vm/drop_caches) where
 *      permitted; where not, that is recorded in meta.csv and the run goes on,
 *   4. with --migrate, moves itself to its target core,
 *   5. forks; the child _exit(0)s at once, the parent waitpid()s for it,
 *   6. munmap()s.
 * Counters and wall time cover step 5 only, in the parent. The counters are opened with
 * inherit = 0: they count the calling (parent) process, which does fork()'s work (copying the
 * page tables, copy-on-write setup) in the kernel, and its wait; the child's own execution and
 * exit are not counted. This is what the thesis measured: perf_event_open on the workload process
 * around the fork call.
 *
 * Modes (4.2.3): single (one process; default core 0, with --migrate moved to core 1) and
 * concurrent (one process per online core; with --migrate two processes on cores 0 and 2 moved
 * to 1 and 3). Concurrent processes meet at a barrier before each fork, so their forks overlap.
 *
 * Outputs in --output DIR: fork.csv, counters.csv, skipped.csv, meta.csv (see usage()).
 * Exit codes: 0 done, 1 a failure while running, 2 invalid arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET, sched_getcpu, getline */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERSION "1.0"
#define MAX_SIZES 64
#define MAX_PROCS 1024
#define MEMORY_MARGIN 0.8 /* a size runs only if size x processes <= 80 % of the available memory */
#define DEFAULT_SIZES "1,8,16,32,64,128,256,512,1024"
#define DEFAULT_TRACE_MARKER "/sys/kernel/tracing/trace_marker"
#define MARKER_START "pirex-fork-start"
#define MARKER_END "pirex-fork-end"
#define MAX_COUNTERS 24 /* the generic counters below and up to 10 raw events (--raw-events) */
#define DEFAULT_PMU_SYSFS "/sys/bus/event_source/devices"

/* ---- counters ------------------------------------------------------------------------------ */

#define CACHE(id, op, res) ((id) | ((op) << 8) | ((res) << 16))

struct counter {
	const char *name; /* perf's name for the event */
	uint32_t type;
	uint64_t config;
	int hardware; /* occupies a PMU counter */
	int priority; /* opening order: the PMU gets the thesis's figure counters first */
	/* decided by the probe in the main process */
	int supported;
	int exclude_kernel;
	char reason[256];
	int raw; /* PERF_TYPE_RAW from --raw-events: the CPU's own event number */
};

/* Column order of fork.csv and counters.csv (raw events named by --raw-events after these). */
static struct counter counters[MAX_COUNTERS] = {
	{"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 0, 0, 0, "", 0},
	{"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0, 0, 0, 0, "", 0},
	{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 0, 0, 0, "", 0},
	{"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, 0, 0, 0, "", 0},
	{"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 0, 0, 0, 0, "", 0},
	{"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1, 1, 0, 0, "", 0},
	{"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, 2, 0, 0, "", 0},
	{"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 1, 6, 0, 0, "", 0},
	{"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1, 4, 0, 0, "", 0},
	{"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1, 3, 0, 0, "", 0},
	{"L1-dcache-loads", PERF_TYPE_HW_CACHE,
	 CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS), 1, 9, 0, 0, "", 0},
	{"L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
	 CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS), 1, 8, 0, 0, "", 0},
	{"LLC-loads", PERF_TYPE_HW_CACHE,
	 CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS), 1, 7, 0, 0, "", 0},
	{"LLC-load-misses", PERF_TYPE_HW_CACHE,
	 CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS), 1, 5, 0, 0, "", 0},
};
static int ncounters; /* the entries above, then the raw events added by --raw-events */

/* ---- state shared by the measuring processes (MAP_SHARED) ----------------------------------- */

struct shared {
	atomic_int arrived;
	atomic_uint generation;
	atomic_int abort;
	atomic_int not_counted[MAX_COUNTERS]; /* measurements in which a supported counter gave no value */
};

struct options {
	unsigned long long sizes[MAX_SIZES];
	int nsizes;
	long repetitions;
	int concurrent;
	int migrate;
	int cores_given;
	int nprocs;
	int start_core[MAX_PROCS];
	int target_core[MAX_PROCS];
	const char *output;
	const char *trace_marker;
	const char *raw_events; /* as given, for meta.csv */
	const char *pmu_sysfs;
	int drop_caches;
	int selected[MAX_COUNTERS];
};

static struct options opt;
static struct shared *shm;
static int skip_size[MAX_SIZES];
static char skip_reason[MAX_SIZES][256];
static char drop_state[320] = "disabled (--no-drop-caches)";
static int drop_fd = -1;
static long online_cpus;

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("forkbench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(" (forkbench --help for the options)\n", stderr);
	va_end(ap);
	exit(2);
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("forkbench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (shm)
		atomic_store(&shm->abort, 1);
	exit(1);
}

static void usage(void)
{
	printf("usage: forkbench [options]\n"
	       "The fork() workload of the 2024 thesis (4.2.2): per size and repetition, pin to a core, mmap and\n"
	       "memset SIZE MB, drop the page cache, optionally migrate, fork (the child exits at once), wait,\n"
	       "unmap; perf_event_open counters and CLOCK_MONOTONIC wall time around fork+wait in the parent.\n"
	       "\n"
	       "  --sizes MB,MB,...     mapped sizes in MB (default " DEFAULT_SIZES ")\n"
	       "  --repetitions R       forks per size and process (default 10)\n"
	       "  --mode single|concurrent\n"
	       "                        single: one process; concurrent: several at once, meeting before each fork\n"
	       "  --migrate             move each process to its target core after the memset, before the fork\n"
	       "  --cores LIST          START or START:TARGET per process, comma-separated. Defaults: single 0\n"
	       "                        (with --migrate 0:1); concurrent one process per online core (with\n"
	       "                        --migrate 0:1,2:3: the thesis's cores 0 and 2 moved to 1 and 3)\n"
	       "  --events LIST         count only these counters (perf names, comma-separated; default all)\n"
	       "  --raw-events LIST     NAME=0xCODE,...: count NAME as the CPU's raw PMU event CODE (PERF_TYPE_RAW),\n"
	       "                        replacing the generic counter of that name or adding a column; none: no raw\n"
	       "                        events (default). The codes are the CPU's own (its TRM; pirex/core/pmu.py)\n"
	       "  --pmu-sysfs DIR       where the kernel lists its PMUs' events (default " DEFAULT_PMU_SYSFS "): an Arm\n"
	       "                        PMU's common events (below 0x40) it does not list are unsupported here\n"
	       "  --output DIR          where the CSV files go (default .)\n"
	       "  --trace               write trace markers to " DEFAULT_TRACE_MARKER "\n"
	       "  --trace-marker PATH   write trace markers '" MARKER_START " ...' and '" MARKER_END " ...' to PATH\n"
	       "                        before and after each fork\n"
	       "  --no-drop-caches      do not drop the page cache before each fork\n"
	       "  --help                this text\n"
	       "\n"
	       "Outputs in DIR:\n"
	       "  fork.csv      mode,migration,size_mb,repetition,process,cpu_before,cpu_after,wall_ns,<one column\n"
	       "                per counter>; a counter's cell is empty where it gave no value, never 0\n"
	       "  counters.csv  counter,supported,kernel_included,reason,event (raw 0xCODE for a raw event)\n"
	       "  skipped.csv   size_mb,reason: sizes that do not fit the available memory\n"
	       "  meta.csv      key,value: drop_caches, perf_event_paranoid, cores, page size, ...\n"
	       "Counters: ");
	for (int i = 0; i < ncounters; i++)
		printf("%s%s", counters[i].name, i + 1 < ncounters ? ", " : "\n");
}

/* ---- argument parsing ----------------------------------------------------------------------- */

static int parse_uint(const char *s, unsigned long long *out)
{
	if (!*s)
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	unsigned long long v = strtoull(s, NULL, 10);
	if (errno)
		return -1;
	*out = v;
	return 0;
}

static void parse_sizes(const char *arg)
{
	size_t len = strlen(arg);
	if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
		die_usage("--sizes: '%s' is not a comma-separated list of sizes in MB", arg);
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		die("out of memory");
	opt.nsizes = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v;
		if (parse_uint(tok, &v) || v == 0)
			die_usage("--sizes: '%s' is not a size in MB (a whole number of at least 1)", tok);
		if (opt.nsizes == MAX_SIZES)
			die_usage("--sizes: at most %d sizes", MAX_SIZES);
		opt.sizes[opt.nsizes++] = v;
	}
	if (opt.nsizes == 0)
		die_usage("--sizes: no size given in '%s'", arg);
	free(copy);
}

static int parse_core(const char *s, const char *entry)
{
	unsigned long long v;
	if (parse_uint(s, &v))
		die_usage("--cores: '%s' is not a core number", entry);
	if (v >= (unsigned long long)online_cpus)
		die_usage("--cores: core %llu is beyond this machine's %ld online cores (0-%ld)", v, online_cpus,
			  online_cpus - 1);
	return (int)v;
}

static void parse_cores(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		die("out of memory");
	opt.nprocs = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (opt.nprocs == MAX_PROCS)
			die_usage("--cores: at most %d processes", MAX_PROCS);
		char *colon = strchr(tok, ':');
		char entry[64];
		snprintf(entry, sizeof entry, "%s", tok);
		if (colon)
			*colon = '\0';
		opt.start_core[opt.nprocs] = parse_core(tok, entry);
		opt.target_core[opt.nprocs] = colon ? parse_core(colon + 1, entry) : -1;
		opt.nprocs++;
	}
	if (opt.nprocs == 0)
		die_usage("--cores: no core given in '%s'", arg);
	free(copy);
}

static void parse_events(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		die("out of memory");
	memset(opt.selected, 0, sizeof opt.selected);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = 0;
		for (int i = 0; i < ncounters; i++)
			if (!strcmp(tok, counters[i].name))
				opt.selected[i] = found = 1;
		if (!found)
			die_usage("--events: unknown counter '%s'", tok);
	}
	free(copy);
}

static int find_counter(const char *name)
{
	for (int i = 0; i < ncounters; i++)
		if (!strcmp(name, counters[i].name))
			return i;
	return -1;
}

static void parse_raw_events(const char *arg)
{
	if (!strcmp(arg, "none"))
		return;
	size_t len = strlen(arg);
	if (len == 0 || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
		die_usage("--raw-events: '%s' is not a comma-separated list of NAME=0xCODE (or none)", arg);
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		die("out of memory");
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq || eq == tok || strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
					      (size_t)(eq - tok))
			die_usage("--raw-events: '%s' is not NAME=0xCODE (e.g. LLC-load-misses=0x52)", tok);
		*eq = '\0';
		const char *code = eq + 1;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(code, &end, 16);
		if (strncmp(code, "0x", 2) || end == code + 2 || *end || errno || v > 0xffff)
			die_usage("--raw-events: %s: '%s' is not an event number (0x0 to 0xffff)", tok, code);
		int i = find_counter(tok);
		if (i < 0) {
			if (ncounters == MAX_COUNTERS)
				die_usage("--raw-events: at most %d counters in all", MAX_COUNTERS);
			i = ncounters++;
			counters[i].name = strdup(tok);
			if (!counters[i].name)
				die("out of memory");
			counters[i].priority = 5;
		}
		counters[i].type = PERF_TYPE_RAW;
		counters[i].config = v;
		counters[i].hardware = 1;
		counters[i].raw = 1;
	}
	free(copy);
}

static void require_cores(int n, const char *what)
{
	if (online_cpus < n)
		die_usage("%s needs %d online cores; this machine has %ld", what, n, online_cpus);
}

static void default_cores(void)
{
	if (!opt.concurrent) {
		require_cores(opt.migrate ? 2 : 1, opt.migrate ? "single mode with --migrate (core 0 -> 1)" : "single mode");
		opt.nprocs = 1;
		opt.start_core[0] = 0;
		opt.target_core[0] = opt.migrate ? 1 : -1;
	} else if (opt.migrate) {
		require_cores(4, "concurrent mode with --migrate (thesis 4.2.3: cores 0 and 2 moved to 1 and 3)");
		opt.nprocs = 2;
		opt.start_core[0] = 0, opt.target_core[0] = 1;
		opt.start_core[1] = 2, opt.target_core[1] = 3;
	} else {
		opt.nprocs = (int)(online_cpus < MAX_PROCS ? online_cpus : MAX_PROCS);
		for (int i = 0; i < opt.nprocs; i++)
			opt.start_core[i] = i, opt.target_core[i] = -1;
	}
}

static void parse_args(int argc, char **argv)
{
	enum { O_SIZES = 1, O_REPS, O_MODE, O_MIGRATE, O_CORES, O_EVENTS, O_OUTPUT, O_TRACE, O_MARKER, O_NODROP, O_HELP,
	       O_RAW, O_SYSFS };
	static const struct option longopts[] = {
		{"sizes", required_argument, NULL, O_SIZES},
		{"repetitions", required_argument, NULL, O_REPS},
		{"mode", required_argument, NULL, O_MODE},
		{"migrate", no_argument, NULL, O_MIGRATE},
		{"cores", required_argument, NULL, O_CORES},
		{"events", required_argument, NULL, O_EVENTS},
		{"output", required_argument, NULL, O_OUTPUT},
		{"trace", no_argument, NULL, O_TRACE},
		{"trace-marker", required_argument, NULL, O_MARKER},
		{"no-drop-caches", no_argument, NULL, O_NODROP},
		{"help", no_argument, NULL, O_HELP},
		{"raw-events", required_argument, NULL, O_RAW},
		{"pmu-sysfs", required_argument, NULL, O_SYSFS},
		{NULL, 0, NULL, 0},
	};
	const char *cores = NULL, *events = NULL;
	int trace = 0;
	unsigned long long v;

	while (ncounters < MAX_COUNTERS && counters[ncounters].name)
		ncounters++;
	opt.raw_events = "none";
	opt.pmu_sysfs = DEFAULT_PMU_SYSFS;
	online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (online_cpus < 1)
		online_cpus = 1;
	parse_sizes(DEFAULT_SIZES);
	opt.repetitions = 10;
	opt.output = ".";
	opt.drop_caches = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_SIZES:
			parse_sizes(optarg);
			break;
		case O_REPS:
			if (parse_uint(optarg, &v) || v < 1 || v > LONG_MAX)
				die_usage("--repetitions: '%s' is not a whole number of at least 1", optarg);
			opt.repetitions = (long)v;
			break;
		case O_MODE:
			if (!strcmp(optarg, "single"))
				opt.concurrent = 0;
			else if (!strcmp(optarg, "concurrent"))
				opt.concurrent = 1;
			else
				die_usage("--mode: unknown mode '%s' (modes: single, concurrent)", optarg);
			break;
		case O_MIGRATE:
			opt.migrate = 1;
			break;
		case O_CORES:
			cores = optarg;
			break;
		case O_EVENTS:
			events = optarg;
			break;
		case O_RAW:
			opt.raw_events = optarg;
			break;
		case O_SYSFS:
			opt.pmu_sysfs = optarg;
			break;
		case O_OUTPUT:
			opt.output = optarg;
			break;
		case O_TRACE:
			trace = 1;
			break;
		case O_MARKER:
			opt.trace_marker = optarg;
			break;
		case O_NODROP:
			opt.drop_caches = 0;
			break;
		case O_HELP:
			usage();
			exit(0);
		default:
			if (optopt)
				die_usage("option --%s needs a value", longopts[optopt - 1].name);
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (trace && !opt.trace_marker)
		opt.trace_marker = DEFAULT_TRACE_MARKER;
	parse_raw_events(opt.raw_events);
	for (int i = 0; i < ncounters; i++)
		opt.selected[i] = 1;
	if (events)
		parse_events(events);

	if (cores) {
		parse_cores(cores);
		if (!opt.concurrent && opt.nprocs != 1)
			die_usage("--cores: single mode runs one process; give one entry, not %d", opt.nprocs);
		for (int i = 0; i < opt.nprocs; i++) {
			if (opt.migrate && opt.target_core[i] < 0)
				opt.target_core[i] = (opt.start_core[i] + 1) % (int)online_cpus;
			if (!opt.migrate && opt.target_core[i] >= 0)
				die_usage("--cores: START:TARGET needs --migrate");
			if (opt.migrate && opt.target_core[i] == opt.start_core[i])
				die_usage("--cores: process %d would migrate from core %d to itself", i, opt.start_core[i]);
		}
	} else {
		default_cores();
	}

	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
		for (int i = 0; i < opt.nprocs; i++) {
			int cs[2] = {opt.start_core[i], opt.target_core[i]};
			for (int k = 0; k < 2; k++)
				if (cs[k] >= 0 && !CPU_ISSET(cs[k], &allowed))
					die_usage("core %d is online but not available to this process (CPU affinity or a "
						  "container's cpuset); choose others with --cores", cs[k]);
		}
	}
}

/* ---- helpers -------------------------------------------------------------------------------- */

static const char *errno_name(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODEV: return "ENODEV";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case ENOSYS: return "ENOSYS";
	case EROFS: return "EROFS";
	case EBUSY: return "EBUSY";
	default: return "errno";
	}
}

static const char *errno_hint(int e)
{
	switch (e) {
	case ENOENT:
	case EOPNOTSUPP:
		return "the kernel or this CPU's PMU does not offer the event (a VM without a virtual PMU, emulation, "
		       "or an event the architecture lacks)";
	case ENODEV: return "no PMU for this event type";
	case EACCES:
	case EPERM:
		return "not permitted (perf_event_paranoid, a missing CAP_PERFMON/CAP_SYS_ADMIN, or a seccomp profile)";
	case ENOSYS:
		return "perf_event_open is not available (QEMU user-mode emulation, a kernel without CONFIG_PERF_EVENTS, "
		       "or seccomp)";
	case EINVAL: return "the kernel rejected the event's attributes";
	default: return "refused by the kernel";
	}
}

static long read_long_file(const char *path, long fallback)
{
	FILE *f = fopen(path, "r");
	long v = fallback;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = fallback;
		fclose(f);
	}
	return v;
}

static void pin(int core)
{
	cpu_set_t mask;
	CPU_ZERO(&mask);
	CPU_SET(core, &mask);
	if (sched_setaffinity(0, sizeof mask, &mask))
		die("sched_setaffinity to core %d: %s", core, strerror(errno));
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void path_in_output(char *buf, size_t n, const char *name)
{
	if ((size_t)snprintf(buf, n, "%s/%s", opt.output, name) >= n)
		die("output path too long: %s/%s", opt.output, name);
}

/* Memory that may be mapped: MemAvailable, or less where a cgroup (a container) limits memory. */
static long long available_mb(char *how, size_t n)
{
	long long avail_kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "MemAvailable: %lld kB", &avail_kb) == 1)
				break;
		fclose(f);
	}
	long long mb = avail_kb >= 0 ? avail_kb / 1024 : -1;
	snprintf(how, n, "MemAvailable %lld MB", mb);
	FILE *mx = fopen("/sys/fs/cgroup/memory.max", "r"), *cur = fopen("/sys/fs/cgroup/memory.current", "r");
	long long max, used;
	if (mx && cur && fscanf(mx, "%lld", &max) == 1 && fscanf(cur, "%lld", &used) == 1) {
		long long left = (max - used) / (1024 * 1024);
		if (mb < 0 || left < mb) {
			mb = left;
			snprintf(how, n, "cgroup memory.max leaves %lld MB", left);
		}
	}
	if (mx)
		fclose(mx);
	if (cur)
		fclose(cur);
	return mb;
}

static void decide_skips(long long avail, const char *how)
{
	for (int s = 0; s < opt.nsizes; s++) {
		unsigned long long mb = opt.sizes[s];
		if (mb > (unsigned long long)(SIZE_MAX / 2) >> 20) {
			skip_size[s] = 1;
			snprintf(skip_reason[s], sizeof skip_reason[s],
				 "%llu MB does not fit this platform's %zu-bit address space", mb, sizeof(size_t) * 8);
		} else if (avail >= 0 && (double)mb * opt.nprocs > MEMORY_MARGIN * (double)avail) {
			skip_size[s] = 1;
			snprintf(skip_reason[s], sizeof skip_reason[s],
				 "needs %llu MB (%llu MB x %d process%s), more than %.0f %% of the available memory (%s)",
				 mb * (unsigned long long)opt.nprocs, mb, opt.nprocs, opt.nprocs == 1 ? "" : "es",
				 MEMORY_MARGIN * 100, how);
		}
	}
}

/* ---- page cache ----------------------------------------------------------------------------- */

static void drop_caches_setup(void)
{
	if (!opt.drop_caches)
		return;
	drop_fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (drop_fd < 0) {
		snprintf(drop_state, sizeof drop_state, "not permitted: %s (%s)%s", errno_name(errno), strerror(errno),
			 errno == EROFS ? "; /proc/sys is read-only (a container without systempaths=unconfined)" : "");
		return;
	}
	sync();
	if (write(drop_fd, "3", 1) != 1) {
		snprintf(drop_state, sizeof drop_state, "not permitted: %s (%s)", errno_name(errno), strerror(errno));
		close(drop_fd);
		drop_fd = -1;
		return;
	}
	snprintf(drop_state, sizeof drop_state, "permitted");
}

static void drop_caches(void)
{
	if (drop_fd < 0)
		return;
	sync();
	if (write(drop_fd, "3", 1) != 1)
		die("writing 3 to /proc/sys/vm/drop_caches failed after it had worked: %s", strerror(errno));
}

/* ---- perf_event_open ----------------------------------------------------------------------- */

static int open_counter(const struct counter *c, int exclude_kernel)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = c->type;
	attr.config = c->config;
	attr.disabled = 1;
	attr.inherit = 0; /* the parent's fork work only (see the top of this file) */
	attr.pinned = 1;  /* never multiplexed: a counter that cannot stay on the PMU reads as nothing, not as a guess */
	attr.exclude_kernel = exclude_kernel ? 1 : 0;
	attr.exclude_hv = 1;
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Reads one counter; 0 and the value, or -1 when it did not count (error state, never scheduled). */
static int read_counter(int fd, uint64_t *value)
{
	uint64_t buf[3];
	ssize_t n = read(fd, buf, sizeof buf);
	if (n != (ssize_t)sizeof buf || buf[2] == 0 || buf[2] < buf[1])
		return -1;
	*value = buf[0];
	return 0;
}

/* 1 when this machine's Arm PMU does not implement a common event (numbers below 0x40, PMCEID), with the
 * reason: the kernel lists each implemented common event as <pmu>/events/<name> = "event=0x..". Other
 * numbers (implementation defined) and other PMUs cannot be checked this way: 0. */
static int pmu_lacks(unsigned long long code, char *why, size_t n)
{
	DIR *d = code < 0x40 ? opendir(opt.pmu_sysfs) : NULL;
	if (!d)
		return 0;
	int lacks = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char dir[2048];
		if (strncmp(e->d_name, "armv", 4) ||
		    (size_t)snprintf(dir, sizeof dir, "%s/%s/events", opt.pmu_sysfs, e->d_name) >= sizeof dir)
			continue;
		DIR *ev = opendir(dir);
		if (!ev)
			continue;
		int listed = 0, any = 0;
		for (struct dirent *f; (f = readdir(ev));) {
			char path[4096];
			unsigned v;
			if (f->d_name[0] == '.' || (size_t)snprintf(path, sizeof path, "%s/%s", dir, f->d_name) >= sizeof path)
				continue;
			FILE *fh = fopen(path, "r");
			if (fh && fscanf(fh, "event=%x", &v) == 1)
				any = 1, listed |= v == code;
			if (fh)
				fclose(fh);
		}
		closedir(ev);
		if (listed) {
			lacks = 0;
			break;
		}
		if (any) {
			lacks = 1;
			if (snprintf(why, n, "the CPU's PMU %s does not implement event %#llx: the kernel does not list it "
				     "among its common events in sysfs (PMCEID)", e->d_name, code) >= (int)n)
				why[n - 1] = '\0'; /* cut, as every reason */
		}
	}
	closedir(d);
	return lacks;
}

/* Decides, in the main process, which counters this machine supports and whether they include the
 * kernel: exclude_kernel = 0 first; on EACCES/EPERM (perf_event_paranoid >= 2 without privileges)
 * exclude_kernel = 1. Then all are enabled together once: a hardware counter that the PMU cannot
 * hold beside the others (too few counters) is unsupported here, with that reason. */
static void probe_counters(int core)
{
	int fds[MAX_COUNTERS];
	int order[MAX_COUNTERS];
	for (int i = 0; i < ncounters; i++)
		order[i] = i;
	for (int i = 1; i < ncounters; i++) /* insertion sort by priority: the kernel schedules in opening order */
		for (int j = i; j > 0 && counters[order[j]].priority < counters[order[j - 1]].priority; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	pin(core);
	for (int k = 0; k < ncounters; k++) {
		int i = order[k];
		struct counter *c = &counters[i];
		fds[i] = -1;
		if (!opt.selected[i]) {
			snprintf(c->reason, sizeof c->reason, "not selected (--events)");
			continue;
		}
		if (c->raw && pmu_lacks(c->config, c->reason, sizeof c->reason))
			continue;
		int fd = open_counter(c, 0), err = errno;
		c->exclude_kernel = 0;
		if (fd < 0 && (err == EACCES || err == EPERM)) {
			fd = open_counter(c, 1), err = errno;
			c->exclude_kernel = 1;
		}
		if (fd < 0) {
			snprintf(c->reason, sizeof c->reason, "perf_event_open: %s (%s): %s", errno_name(err), strerror(err),
				 errno_hint(err));
			continue;
		}
		fds[i] = fd;
		c->supported = 1;
	}
	prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0);
	for (volatile int spin = 0; spin < 100000; spin++)
		;
	(void)getppid();
	prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
	for (int i = 0; i < ncounters; i++) {
		uint64_t v;
		if (fds[i] < 0)
			continue;
		if (read_counter(fds[i], &v)) {
			counters[i].supported = 0;
			snprintf(counters[i].reason, sizeof counters[i].reason,
				 "opened, but the PMU could not hold it beside the other counters (too few hardware "
				 "counters, or the NMI watchdog holds one); count it alone with --events %s",
				 counters[i].name);
		}
		close(fds[i]);
	}
}

/* ---- barrier between the concurrent processes ------------------------------------------------ */

static void barrier(void)
{
	unsigned gen = atomic_load(&shm->generation);
	if (atomic_fetch_add(&shm->arrived, 1) + 1 == opt.nprocs) {
		atomic_store(&shm->arrived, 0);
		atomic_fetch_add(&shm->generation, 1);
		return;
	}
	for (long i = 0; atomic_load(&shm->generation) == gen; i++) {
		if (atomic_load(&shm->abort))
			_exit(1);
		if (i < 200000)
			sched_yield();
		else
			usleep(100);
	}
}

/* ---- one measuring process ------------------------------------------------------------------- */

static void marker(int fd, const char *what, int proc, unsigned long long mb, long rep)
{
	if (fd < 0)
		return;
	char buf[160];
	int n = snprintf(buf, sizeof buf, "%s pid=%d process=%d size_mb=%llu repetition=%ld cpu=%d\n", what,
			 (int)getpid(), proc, mb, rep, sched_getcpu());
	if (write(fd, buf, (size_t)n) != n)
		die("writing the trace marker to %s: %s", opt.trace_marker, strerror(errno));
}

static void worker(int proc)
{
	char path[4096], name[64];
	snprintf(name, sizeof name, "fork.csv.part%d", proc);
	path_in_output(path, sizeof path, name);
	FILE *out = fopen(path, "w");
	if (!out)
		die("cannot write %s: %s", path, strerror(errno));
	int mfd = -1;
	if (opt.trace_marker && (mfd = open(opt.trace_marker, O_WRONLY | O_CLOEXEC)) < 0)
		die("cannot open the trace marker %s: %s", opt.trace_marker, strerror(errno));

	int start = opt.start_core[proc], target = opt.target_core[proc];
	pin(start);
	int fds[MAX_COUNTERS];
	for (int i = 0; i < ncounters; i++) {
		fds[i] = -1;
		if (counters[i].supported && (fds[i] = open_counter(&counters[i], counters[i].exclude_kernel)) < 0)
			fprintf(stderr, "forkbench: process %d: %s: %s; its cells stay empty\n", proc, counters[i].name,
				strerror(errno));
	}

	for (int s = 0; s < opt.nsizes; s++) {
		if (skip_size[s])
			continue;
		unsigned long long mb = opt.sizes[s];
		size_t size = (size_t)mb << 20;
		for (long rep = 0; rep < opt.repetitions; rep++) {
			pin(start);
			void *buffer = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (buffer == MAP_FAILED)
				die("process %d: mmap of %llu MB: %s", proc, mb, strerror(errno));
			memset(buffer, 0, size);
			barrier();
			if (proc == 0)
				drop_caches(); /* machine-wide: once per repetition, while the others wait */
			barrier();
			if (opt.migrate)
				pin(target);
			for (int i = 0; i < ncounters; i++)
				if (fds[i] >= 0)
					ioctl(fds[i], PERF_EVENT_IOC_RESET, 0);
			barrier(); /* the forks start together */

			int cpu_before = sched_getcpu();
			marker(mfd, MARKER_START, proc, mb, rep);
			/* one prctl enables every counter this process opened, so none counts the others' enabling */
			prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0);
			int64_t t0 = now_ns();
			pid_t pid = fork();
			if (pid == 0)
				_exit(0);
			if (pid < 0)
				die("process %d: fork with %llu MB mapped: %s", proc, mb, strerror(errno));
			int status;
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			int64_t t1 = now_ns();
			prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
			marker(mfd, MARKER_END, proc, mb, rep);
			int cpu_after = sched_getcpu();

			if (munmap(buffer, size))
				die("munmap: %s", strerror(errno));
			fprintf(out, "%s,%s,%llu,%ld,%d,%d,%d,%" PRId64, opt.concurrent ? "concurrent" : "single",
				opt.migrate ? "true" : "false", mb, rep, proc, cpu_before, cpu_after, t1 - t0);
			for (int i = 0; i < ncounters; i++) {
				uint64_t v;
				if (!counters[i].supported)
					fputc(',', out);
				else if (fds[i] >= 0 && read_counter(fds[i], &v) == 0)
					fprintf(out, ",%" PRIu64, v);
				else {
					fputc(',', out);
					atomic_fetch_add(&shm->not_counted[i], 1);
				}
			}
			fputc('\n', out);
		}
	}
	if (fclose(out))
		die("writing %s: %s", path, strerror(errno));
	exit(0);
}

/* ---- outputs -------------------------------------------------------------------------------- */

static FILE *open_output(const char *name)
{
	char path[4096];
	path_in_output(path, sizeof path, name);
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

static void close_output(FILE *f, const char *name)
{
	if (fclose(f))
		die("writing %s/%s: %s", opt.output, name, strerror(errno));
}

/* The processes' rows interleaved into one fork.csv: size, repetition, then process. */
static int merge_rows(void)
{
	FILE *out = open_output("fork.csv");
	fputs("mode,migration,size_mb,repetition,process,cpu_before,cpu_after,wall_ns", out);
	for (int i = 0; i < ncounters; i++)
		fprintf(out, ",%s", counters[i].name);
	fputc('\n', out);
	FILE *parts[MAX_PROCS];
	char path[4096], name[64];
	for (int p = 0; p < opt.nprocs; p++) {
		snprintf(name, sizeof name, "fork.csv.part%d", p);
		path_in_output(path, sizeof path, name);
		parts[p] = fopen(path, "r");
	}
	char *line = NULL;
	size_t cap = 0;
	int rows = 0;
	for (int more = 1; more;) {
		more = 0;
		for (int p = 0; p < opt.nprocs; p++) {
			if (parts[p] && getline(&line, &cap, parts[p]) > 0) {
				fputs(line, out);
				rows++;
				more = 1;
			}
		}
	}
	free(line);
	for (int p = 0; p < opt.nprocs; p++) {
		if (parts[p])
			fclose(parts[p]);
		snprintf(name, sizeof name, "fork.csv.part%d", p);
		path_in_output(path, sizeof path, name);
		unlink(path);
	}
	close_output(out, "fork.csv");
	return rows;
}

static void csv_field(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
}

static void write_counters(long measurements)
{
	FILE *f = open_output("counters.csv");
	fputs("counter,supported,kernel_included,reason,event\n", f);
	for (int i = 0; i < ncounters; i++) {
		struct counter *c = &counters[i];
		int missed = atomic_load(&shm->not_counted[i]);
		if (c->supported && missed) {
			snprintf(c->reason, sizeof c->reason,
				 "gave no value in %d of %ld measurements (the PMU could not hold it then: another perf "
				 "user or the NMI watchdog); those cells are empty", missed, measurements);
		}
		fprintf(f, "%s,%s,%s,", c->name, c->supported ? "true" : "false",
			c->supported ? (c->exclude_kernel ? "false" : "true") : "");
		csv_field(f, c->reason);
		if (c->raw)
			fprintf(f, ",raw %#llx\n", (unsigned long long)c->config);
		else
			fputs(",\n", f);
	}
	close_output(f, "counters.csv");
}

static void write_skipped(void)
{
	FILE *f = open_output("skipped.csv");
	fputs("size_mb,reason\n", f);
	for (int s = 0; s < opt.nsizes; s++)
		if (skip_size[s]) {
			fprintf(f, "%llu,", opt.sizes[s]);
			csv_field(f, skip_reason[s]);
			fputc('\n', f);
		}
	close_output(f, "skipped.csv");
}

static void meta_row(FILE *f, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_row(FILE *f, const char *key, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(f, "%s,", key);
	csv_field(f, buf);
	fputc('\n', f);
}

static void write_meta(long long avail, const char *how)
{
	struct utsname u;
	uname(&u);
	FILE *f = open_output("meta.csv");
	char cores[4096] = "", sizes[2048] = "";
	size_t n = 0;
	for (int p = 0; p < opt.nprocs && n < sizeof cores - 32; p++) {
		if (opt.target_core[p] >= 0)
			n += (size_t)snprintf(cores + n, sizeof cores - n, "%s%d:%d", p ? " " : "", opt.start_core[p],
					      opt.target_core[p]);
		else
			n += (size_t)snprintf(cores + n, sizeof cores - n, "%s%d", p ? " " : "", opt.start_core[p]);
	}
	n = 0;
	for (int s = 0; s < opt.nsizes && n < sizeof sizes - 32; s++)
		n += (size_t)snprintf(sizes + n, sizeof sizes - n, "%s%llu", s ? " " : "", opt.sizes[s]);
	int with_kernel = 0, without_kernel = 0;
	for (int i = 0; i < ncounters; i++)
		if (counters[i].supported)
			counters[i].exclude_kernel ? without_kernel++ : with_kernel++;

	fputs("key,value\n", f);
	meta_row(f, "forkbench_version", "%s", VERSION);
	meta_row(f, "mode", "%s", opt.concurrent ? "concurrent" : "single");
	meta_row(f, "migration", "%s", opt.migrate ? "true" : "false");
	meta_row(f, "processes", "%d", opt.nprocs);
	meta_row(f, "cores", "%s", cores);
	meta_row(f, "online_cpus", "%ld", online_cpus);
	meta_row(f, "sizes_mb", "%s", sizes);
	meta_row(f, "repetitions", "%ld", opt.repetitions);
	meta_row(f, "page_size", "%ld", sysconf(_SC_PAGESIZE));
	meta_row(f, "drop_caches", "%s", drop_state);
	meta_row(f, "drop_caches_by", "%s", opt.nprocs > 1 ? "process 0, once per repetition (machine-wide)" : "process 0");
	meta_row(f, "perf_event_paranoid", "%ld", read_long_file("/proc/sys/kernel/perf_event_paranoid", -99));
	meta_row(f, "kernel_included", "%s",
		 with_kernel && without_kernel ? "partial" : with_kernel ? "true" : without_kernel ? "false" : "");
	meta_row(f, "counter_scope", "%s", "parent process only (inherit=0), fork() and waitpid() in the window");
	meta_row(f, "clock", "%s", "CLOCK_MONOTONIC");
	meta_row(f, "available_memory_mb", "%lld", avail);
	meta_row(f, "available_memory_source", "%s", how);
	meta_row(f, "memory_margin", "%.2f", MEMORY_MARGIN);
	meta_row(f, "trace_marker", "%s", opt.trace_marker ? opt.trace_marker : "none");
	meta_row(f, "raw_events", "%s", opt.raw_events);
	meta_row(f, "uid", "%d", (int)geteuid());
	meta_row(f, "machine", "%s", u.machine);
	meta_row(f, "kernel", "%s", u.release);
	close_output(f, "meta.csv");
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	if (mkdir(opt.output, 0777) && errno != EEXIST)
		die_usage("--output: cannot create %s: %s", opt.output, strerror(errno));
	if (opt.trace_marker) {
		int fd = open(opt.trace_marker, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			die_usage("--trace-marker: cannot open %s for writing: %s (tracefs needs root and must be mounted)",
				  opt.trace_marker, strerror(errno));
		close(fd);
	}

	char how[128];
	long long avail = available_mb(how, sizeof how);
	decide_skips(avail, how);
	drop_caches_setup();
	probe_counters(opt.start_core[0]);

	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap of the shared barrier: %s", strerror(errno));
	memset(shm, 0, sizeof *shm);
	write_skipped();
	write_meta(avail, how);
	fflush(NULL);

	pid_t pids[MAX_PROCS];
	for (int p = 0; p < opt.nprocs; p++) {
		pids[p] = fork();
		if (pids[p] == 0)
			worker(p);
		if (pids[p] < 0) {
			atomic_store(&shm->abort, 1);
			die("fork of measuring process %d: %s", p, strerror(errno));
		}
	}
	int failed = 0;
	for (int left = opt.nprocs; left > 0; left--) {
		int status;
		pid_t pid;
		while ((pid = wait(&status)) < 0 && errno == EINTR)
			;
		if (pid < 0)
			break;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			failed = 1;
			atomic_store(&shm->abort, 1); /* the others stop at their next barrier */
		}
	}
	int rows = merge_rows();
	long measured = 0;
	for (int s = 0; s < opt.nsizes; s++)
		measured += skip_size[s] ? 0 : opt.repetitions * opt.nprocs;
	write_counters(measured);
	if (failed)
		die("a measuring process failed; %s/fork.csv holds the %d rows written before", opt.output, rows);
	if (drop_fd >= 0)
		close(drop_fd);
	return 0;
}
