package io.github.pirexbench.moobench;

/**
 * The monitored application of the benchmark: the one class the monitoring frameworks
 * instrument (Kieker's aop.xml, OpenTelemetry's methods.include, SPASS-meter's XML
 * configuration all name exactly this class and method, and nothing of the driver).
 *
 * <p>As in MooBench's {@code MonitoredClassSimple}: the method calls itself until the given
 * recursion depth is reached (depth 1 = one execution, no recursion), and the innermost call
 * busy-waits {@code methodTime} nanoseconds of wall-clock time on {@link System#nanoTime()}.
 * With {@code methodTime = 0} the innermost call reads the clock twice and returns. A monitoring
 * probe thus runs {@code recursionDepth} times per top-level call.
 */
public final class MonitoredClass {

    /**
     * Recurses to {@code recursionDepth}, then busy-waits {@code methodTime} ns.
     *
     * @param methodTime     time in ns the innermost call waits (0: none)
     * @param recursionDepth number of nested executions, 1 or more
     * @return the clock value at the end of the wait (keeps the loop alive for the JIT)
     */
    public long monitoredMethod(final long methodTime, final int recursionDepth) {
        if (recursionDepth > 1) {
            return this.monitoredMethod(methodTime, recursionDepth - 1);
        }
        final long exitTime = System.nanoTime() + methodTime;
        long currentTime;
        do {
            currentTime = System.nanoTime();
        } while (currentTime < exitTime);
        return currentTime;
    }
}
