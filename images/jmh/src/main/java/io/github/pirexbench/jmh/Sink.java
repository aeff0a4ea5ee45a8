package io.github.pirexbench.jmh;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * The receiving end of Benchmark 6: accepts any number of connections and reads and discards
 * what arrives, one thread per connection, until the process is stopped. Prints one line when it
 * listens, so that a runner can wait for it.
 *
 * <pre>java -cp jmh.jar io.github.pirexbench.jmh.Sink [port] [bind address]</pre>
 */
public final class Sink {

    private Sink() {}

    public static void main(String[] args) throws IOException {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 10133;
        String bind = args.length > 1 ? args[1] : "0.0.0.0";
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(bind, port));
            System.out.println("pirex sink listening on " + bind + ":" + server.getLocalPort());
            System.out.flush();
            while (true) {
                Socket client = server.accept();
                Thread t = new Thread(() -> drain(client), "sink-" + client.getPort());
                t.setDaemon(true);
                t.start();
            }
        }
    }

    private static void drain(Socket client) {
        byte[] buffer = new byte[64 * 1024];
        try (client; InputStream in = client.getInputStream()) {
            while (in.read(buffer) >= 0) {
                // discard
            }
        } catch (IOException e) {
            // the sender went away: nothing to do
        }
    }
}
