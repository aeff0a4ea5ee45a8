package io.github.pirexbench.moobench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * The benchmark driver, after MooBench's measurement harness (same method, own code): each of
 * {@code threads} threads calls {@link MonitoredClass#monitoredMethod} {@code calls} times and
 * times every top-level call (the whole recursion) with {@link System#nanoTime()}. Per call it
 * keeps the duration, the used heap after the call and the number of garbage collections since
 * the previous call, in arrays allocated before the loop; nothing is allocated, boxed or printed
 * in the loop. After all threads are done it writes MooBench's raw layout, without a header:
 *
 * <pre>thread;duration_ns;used_heap_bytes;gc_count_delta</pre>
 *
 * one line per call, thread by thread ("1", "2", ...), in call order, separator ';'. MooBench's
 * analysis (R: read.csv2(header=FALSE), duration = column 2, steady state = second half) reads
 * it unchanged.
 *
 * <pre>
 * java [agent options] -jar moobench.jar --total-calls N --recursion-depth D --method-time NS
 *      --total-threads T --output-filename FILE [--quickstart] [--heap-probe runtime|mxbean]
 *      [--empty]
 * </pre>
 *
 * Without {@code --quickstart}, as MooBench does, the driver first fills the free heap with
 * 128 MB arrays four times, 5 s apart, so that the heap is grown and collected before the
 * measurement. {@code --heap-probe mxbean} reads the used heap as MooBench does
 * (MemoryMXBean, which allocates a MemoryUsage per call, outside the timed interval); the
 * default {@code runtime} (Runtime total - free) allocates nothing. {@code --empty} times an
 * empty interval instead of the call: the cost of the timing itself.
 */
public final class Benchmark {

    private Benchmark() {}

    /** Parsed command line. */
    static final class Parameters {
        int calls = -1;
        int depth = -1;
        long methodTime = -1;
        int threads = -1;
        Path output;
        boolean quickstart;
        boolean mxbeanHeap;
        boolean empty;
    }

    public static void main(final String[] args) throws Exception {
        final Parameters p;
        try {
            p = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("moobench: " + e.getMessage());
            System.err.println(usage());
            System.exit(2);
            return;
        }

        System.out.println(" # Experiment run configuration:");
        System.out.println(" # 1. Output filename " + p.output);
        System.out.println(" # 2. Recursion Depth " + p.depth);
        System.out.println(" # 3. Threads " + p.threads);
        System.out.println(" # 4. Total-Calls " + p.calls);
        System.out.println(" # 5. Method-Time " + p.methodTime);
        System.out.println(" # JVM " + System.getProperty("java.vm.vendor") + " "
                + System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version")
                + " (" + System.getProperty("os.arch") + "), heap max "
                + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MB, arguments "
                + ManagementFactory.getRuntimeMXBean().getInputArguments());

        final MonitoredClass monitored = new MonitoredClass();
        final CountDownLatch start = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(p.threads);
        final Worker[] workers = new Worker[p.threads];
        final Thread[] threads = new Thread[p.threads];
        for (int i = 0; i < p.threads; i++) {
            workers[i] = new Worker(monitored, p, start, done);
            threads[i] = new Thread(workers[i], String.valueOf(i + 1));
        }
        if (!p.quickstart) {
            settleHeap();
        }
        for (Thread t : threads) {
            t.start();
        }
        System.out.println(" # 6. Starting benchmark ...");
        final long begin = System.nanoTime();
        start.countDown();
        done.await();
        final long seconds = (System.nanoTime() - begin) / 1_000_000_000L;
        System.out.println(" #    done (" + seconds + " s)");
        for (Worker w : workers) {
            if (w.failure != null) {
                System.err.println("moobench: a benchmark thread failed");
                w.failure.printStackTrace();
                System.exit(1);
            }
        }

        System.out.print(" # 7. Writing results ... ");
        write(p.output, threads, workers, p.calls);
        System.out.println("done");
        System.out.flush();
        // Agents may leave non-daemon threads behind; their shutdown hooks still run.
        System.exit(0);
    }

    /** MooBench's pre-run phase: four times, fill the free heap with 128 MB arrays, then wait 5 s. */
    private static void settleHeap() throws InterruptedException {
        System.out.println(" # Settling the heap (4 x 5 s; --quickstart skips this) ...");
        long sink = 0;
        for (int round = 0; round < 4; round++) {
            final long chunks = Runtime.getRuntime().freeMemory() >> 27;
            final int size = 128 * 1024 * 128; // longs: 128 MB
            for (long c = 0; c < chunks; c++) {
                final long[] grab = new long[size];
                for (int i = 0; i < size; i++) {
                    grab[i] = System.nanoTime();
                }
                sink += grab[size - 1];
            }
            Thread.sleep(5000);
        }
        if (sink == 42) {
            System.out.println();
        }
    }

    private static void write(final Path file, final Thread[] threads, final Worker[] workers,
            final int calls) throws IOException {
        final Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try (Writer out = new BufferedWriter(
                new OutputStreamWriter(Files.newOutputStream(file), StandardCharsets.US_ASCII),
                1 << 16)) {
            final StringBuilder line = new StringBuilder(64);
            for (int t = 0; t < workers.length; t++) {
                final String name = threads[t].getName();
                final Worker w = workers[t];
                for (int i = 0; i < calls; i++) {
                    line.setLength(0);
                    line.append(name).append(';').append(w.durations[i]).append(';')
                            .append(w.usedHeap[i]).append(';').append(w.gcDelta[i]).append('\n');
                    out.append(line);
                }
            }
        }
    }

    /** One benchmark thread: its own result arrays, allocated before it runs. */
    static final class Worker implements Runnable {
        private final MonitoredClass monitored;
        private final int calls;
        private final int depth;
        private final long methodTime;
        private final boolean mxbeanHeap;
        private final boolean empty;
        private final CountDownLatch start;
        private final CountDownLatch done;
        private final GarbageCollectorMXBean[] collectors;
        private final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        private final Runtime runtime = Runtime.getRuntime();
        final long[] durations;
        final long[] usedHeap;
        final long[] gcDelta;
        volatile Throwable failure;
        /** Written once after the loop, so that the JIT cannot drop the calls. */
        volatile long blackhole;

        Worker(final MonitoredClass monitored, final Parameters p, final CountDownLatch start,
                final CountDownLatch done) {
            this.monitored = monitored;
            this.calls = p.calls;
            this.depth = p.depth;
            this.methodTime = p.methodTime;
            this.mxbeanHeap = p.mxbeanHeap;
            this.empty = p.empty;
            this.start = start;
            this.done = done;
            final List<GarbageCollectorMXBean> beans = ManagementFactory.getGarbageCollectorMXBeans();
            this.collectors = beans.toArray(new GarbageCollectorMXBean[0]);
            this.durations = new long[calls];
            this.usedHeap = new long[calls];
            this.gcDelta = new long[calls];
        }

        @Override
        public void run() {
            try {
                start.await();
                if (empty) {
                    measureEmpty();
                } else {
                    measure();
                }
            } catch (Throwable e) {
                failure = e;
            } finally {
                done.countDown();
            }
        }

        private void measure() {
            final MonitoredClass mc = this.monitored;
            final long[] d = this.durations;
            final long[] h = this.usedHeap;
            final long[] g = this.gcDelta;
            final long time = this.methodTime;
            final int rec = this.depth;
            long acc = 0;
            long lastGc = gcCount();
            for (int i = 0; i < d.length; i++) {
                final long t0 = System.nanoTime();
                acc += mc.monitoredMethod(time, rec);
                final long t1 = System.nanoTime();
                final long gc = gcCount();
                d[i] = t1 - t0;
                h[i] = usedHeap();
                g[i] = gc - lastGc;
                lastGc = gc;
            }
            blackhole = acc;
        }

        /** The same loop without the call: what timing and bookkeeping cost. */
        private void measureEmpty() {
            final long[] d = this.durations;
            final long[] h = this.usedHeap;
            final long[] g = this.gcDelta;
            long lastGc = gcCount();
            for (int i = 0; i < d.length; i++) {
                final long t0 = System.nanoTime();
                final long t1 = System.nanoTime();
                final long gc = gcCount();
                d[i] = t1 - t0;
                h[i] = usedHeap();
                g[i] = gc - lastGc;
                lastGc = gc;
            }
        }

        private long usedHeap() {
            if (mxbeanHeap) {
                return memory.getHeapMemoryUsage().getUsed();
            }
            return runtime.totalMemory() - runtime.freeMemory();
        }

        private long gcCount() {
            long count = 0;
            for (GarbageCollectorMXBean bean : collectors) {
                count += bean.getCollectionCount();
            }
            return count;
        }
    }

    static Parameters parse(final String[] args) {
        final Parameters p = new Parameters();
        for (int i = 0; i < args.length; i++) {
            final String a = args[i];
            switch (a) {
                case "--total-calls", "-c" -> p.calls = positiveInt(a, value(args, ++i, a));
                case "--recursion-depth", "-d" -> p.depth = positiveInt(a, value(args, ++i, a));
                case "--method-time", "-m" -> p.methodTime = nonNegativeLong(a, value(args, ++i, a));
                case "--total-threads", "-t" -> p.threads = positiveInt(a, value(args, ++i, a));
                case "--output-filename", "-o" -> p.output = Paths.get(value(args, ++i, a));
                case "--quickstart", "-q" -> p.quickstart = true;
                case "--force-terminate", "-f" -> {
                    // MooBench's option; this driver always ends with System.exit.
                }
                case "--heap-probe" -> {
                    final String v = value(args, ++i, a);
                    if (!v.equals("runtime") && !v.equals("mxbean")) {
                        throw new IllegalArgumentException("--heap-probe: runtime or mxbean, not " + v);
                    }
                    p.mxbeanHeap = v.equals("mxbean");
                }
                case "--empty" -> p.empty = true;
                case "--help", "-h" -> {
                    System.out.println(usage());
                    System.exit(0);
                }
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (p.calls < 0 || p.depth < 0 || p.methodTime < 0 || p.threads < 0 || p.output == null) {
            throw new IllegalArgumentException("--total-calls, --recursion-depth, --method-time, "
                    + "--total-threads and --output-filename are required");
        }
        return p;
    }

    private static String value(final String[] args, final int i, final String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static int positiveInt(final String option, final String v) {
        final int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + ": not a number: " + v);
        }
        if (n < 1) {
            throw new IllegalArgumentException(option + " must be at least 1");
        }
        return n;
    }

    private static long nonNegativeLong(final String option, final String v) {
        final long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + ": not a number: " + v);
        }
        if (n < 0) {
            throw new IllegalArgumentException(option + " must not be negative");
        }
        return n;
    }

    static String usage() {
        return "usage: java -jar moobench.jar --total-calls N --recursion-depth D --method-time NS"
                + " --total-threads T --output-filename FILE [--quickstart]"
                + " [--heap-probe runtime|mxbean] [--empty]\n"
                + "  writes FILE: thread;duration_ns;used_heap_bytes;gc_count_delta per call, no header";
    }
}
