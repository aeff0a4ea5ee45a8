package io.github.pirexbench.jmh;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/*
 * ICPE'18 Experiment 1, Benchmarks 1-4: the throughput of calling a recursive method to depth 10
 * (the paper's Listing 1, also MooBench's monitored method), under four compilation regimes:
 *
 *   B1 b1_default    the JIT decides (default compilation)
 *   B2 b2_inline     inlining of the recursive method requested
 *   B3 b3_dontInline inlining of the recursive method suppressed
 *   B4 b4_exclude    the recursive method excluded from compilation (interpreted)
 *
 * Each benchmark calls its own copy of the method, so that one regime's compiler directive cannot
 * leak into another's. The method returns nothing, as in the paper; the paper's B1 and B2 ran at
 * about 100 cycles per call on a Pi 3, so the JIT did not remove the calls there, and B3/B1 and
 * B4/B1 in pirex's tables show whether it does on another JVM.
 *
 * The class defaults are the paper's protocol: 10 fresh JVMs, each with 20 warm-up and 20
 * measurement iterations of 1 s, at the declared depth (pirex/images/test_settings.py checks them against
 * experiments/jmh/experiment.yaml). The runner and pirex-jmh pass a profile's values, depth too, on
 * the command line.
 *
 * HOW TO RUN
 *   $ java -jar jmh.jar RecursionBenchmark -rf json -rff /results/jmh.json
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 20, time = 1)
@Measurement(iterations = 20, time = 1)
@Fork(10)
@State(Scope.Thread)
public class RecursionBenchmark {

    // Not final: the JIT must not fold the depth into a constant.
    @Param("10")
    public int depth;

    @Benchmark
    public void b1_default() {
        recurse(depth);
    }

    @Benchmark
    public void b2_inline() {
        recurseInlined(depth);
    }

    @Benchmark
    public void b3_dontInline() {
        recurseNotInlined(depth);
    }

    @Benchmark
    public void b4_exclude() {
        recurseInterpreted(depth);
    }

    public void recurse(final int depth) {
        if (depth == 0) {
            return;
        } else {
            this.recurse(depth - 1);
        }
    }

    @CompilerControl(CompilerControl.Mode.INLINE)
    public void recurseInlined(final int depth) {
        if (depth == 0) {
            return;
        } else {
            this.recurseInlined(depth - 1);
        }
    }

    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    public void recurseNotInlined(final int depth) {
        if (depth == 0) {
            return;
        } else {
            this.recurseNotInlined(depth - 1);
        }
    }

    @CompilerControl(CompilerControl.Mode.EXCLUDE)
    public void recurseInterpreted(final int depth) {
        if (depth == 0) {
            return;
        } else {
            this.recurseInterpreted(depth - 1);
        }
    }
}
