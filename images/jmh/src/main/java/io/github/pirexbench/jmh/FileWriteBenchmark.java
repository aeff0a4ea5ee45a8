package io.github.pirexbench.jmh;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/*
 * ICPE'18 Experiment 1, Benchmark 5: file I/O of the storage device under the work directory.
 * Every invocation writes 4 bytes to a file with one write(2) (an unbuffered FileOutputStream);
 * every 100,000 invocations the file is synced to the device (fsync). What this measures is
 * mostly the device and the file system beneath the directory: an SD card, a USB disk, Docker's
 * overlayfs or a bind mount. Run it in the directory whose storage you want to compare (dir).
 *
 * The file is created anew for every iteration and deleted after it, so that a fast machine does
 * not fill the disk (the paper chose 4 bytes per call for the same reason).
 *
 * HOW TO RUN
 *   $ java -jar jmh.jar FileWriteBenchmark -p dir=/work -rf json -rff /results/jmh.json
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 20, time = 1)
@Measurement(iterations = 20, time = 1)
@Fork(10)
@State(Scope.Thread)
public class FileWriteBenchmark {

    static final int SYNC_EVERY = 100_000;

    @Param(".")
    public String dir;

    private final byte[] data = {'p', 'i', 'r', 'x'};
    private File file;
    private FileOutputStream out;
    private int sinceSync;

    @Setup(Level.Iteration)
    public void open() throws IOException {
        file = File.createTempFile("pirex-b5-", ".bin", new File(dir));
        out = new FileOutputStream(file);
        sinceSync = 0;
    }

    @Benchmark
    public void b5_fileWrite() throws IOException {
        out.write(data);
        if (++sinceSync == SYNC_EVERY) {
            out.getFD().sync();
            sinceSync = 0;
        }
    }

    @TearDown(Level.Iteration)
    public void close() throws IOException {
        out.close();
        if (!file.delete()) {
            throw new IOException("could not delete " + file);
        }
    }
}
