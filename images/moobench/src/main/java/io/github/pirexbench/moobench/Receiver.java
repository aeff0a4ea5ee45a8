package io.github.pirexbench.moobench;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The far end of Kieker's TCP writer (configuration kieker-tcp): accepts connections, reads and
 * discards every byte, one thread per connection, until the process is stopped. Kieker's
 * SingleSocketTcpWriter blocks the monitored application for good when nothing listens, so the
 * runner starts this first and waits for its "listening" line. On exit (SIGTERM) it prints how
 * many bytes arrived: evidence that the probe really wrote.
 *
 * <pre>java -cp moobench.jar io.github.pirexbench.moobench.Receiver [port] [bind address]</pre>
 */
public final class Receiver {

    private static final AtomicLong BYTES = new AtomicLong();
    private static final AtomicLong CONNECTIONS = new AtomicLong();

    private Receiver() {}

    public static void main(final String[] args) throws IOException {
        final int port = args.length > 0 ? Integer.parseInt(args[0]) : 2345;
        final String bind = args.length > 1 ? args[1] : "127.0.0.1";
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("pirex moobench receiver: " + CONNECTIONS.get() + " connection(s), "
                    + BYTES.get() + " bytes received");
            System.out.flush();
        }));
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(bind, port));
            System.out.println("pirex moobench receiver listening on " + bind + ":" + server.getLocalPort());
            System.out.flush();
            while (true) {
                final Socket client = server.accept();
                CONNECTIONS.incrementAndGet();
                final Thread t = new Thread(() -> drain(client), "receiver-" + client.getPort());
                t.setDaemon(true);
                t.start();
            }
        }
    }

    private static void drain(final Socket client) {
        final byte[] buffer = new byte[64 * 1024];
        try (client; InputStream in = client.getInputStream()) {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                BYTES.addAndGet(n);
            }
        } catch (IOException e) {
            // the writer went away: nothing to do
        }
    }
}
