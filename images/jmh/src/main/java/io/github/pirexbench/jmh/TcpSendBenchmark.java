package io.github.pirexbench.jmh;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
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
 * ICPE'18 Experiment 1, Benchmark 6: network I/O. Every invocation sends 4 bytes over one TCP
 * connection (one write(2) on the socket's unbuffered stream, Nagle's algorithm left on as by
 * default) to a sink that reads and discards them (Sink, run on another host in the paper's
 * setup; on this host by default). Under Docker's default bridge network the bytes cross the
 * container's own network stack and a NAT, which is what a docker/native ratio shows.
 *
 * HOW TO RUN
 *   $ java -cp jmh.jar io.github.pirexbench.jmh.Sink 10133 &
 *   $ java -jar jmh.jar TcpSendBenchmark -p host=127.0.0.1 -p port=10133 -rf json -rff /results/jmh.json
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 20, time = 1)
@Measurement(iterations = 20, time = 1)
@Fork(10)
@State(Scope.Thread)
public class TcpSendBenchmark {

    @Param("127.0.0.1")
    public String host;

    @Param("10133")
    public int port;

    private final byte[] data = {'p', 'i', 'r', 'x'};
    private Socket socket;
    private OutputStream out;

    @Setup(Level.Trial)
    public void connect() throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(host, port), 10_000);
        out = socket.getOutputStream();
    }

    @Benchmark
    public void b6_tcpSend() throws IOException {
        out.write(data);
    }

    @TearDown(Level.Trial)
    public void disconnect() throws IOException {
        socket.close();
    }
}
