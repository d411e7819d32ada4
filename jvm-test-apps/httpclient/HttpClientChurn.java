package httpclient;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.apache.commons.httpclient.HttpClient;
import org.apache.commons.httpclient.MultiThreadedHttpConnectionManager;
import org.apache.commons.httpclient.methods.GetMethod;
import org.apache.commons.httpclient.params.HttpConnectionParams;
import org.apache.commons.httpclient.protocol.Protocol;
import org.apache.commons.httpclient.protocol.ProtocolSocketFactory;

/**
 * A steady client in a real HTTP library: Debian's Apache Commons HttpClient 3.1
 * (libcommons-httpclient-java) with its MultiThreadedHttpConnectionManager, fetching from tens
 * of thousands of different hosts, one request each, releasing every connection and purging
 * the idle ones every few hundred requests, as a crawler or a webhook sender does. Each
 * connection brings its own parameters, streams and buffers, and a pool per host; all of it is
 * freed by the purge, so only a few thousand of the library's objects are alive at any time.
 * Nothing here leaks.
 *
 * The hosts are names no resolver knows (h1.example, h2.example, ...): the client reaches them
 * through a proxy, an in-process HTTP server on a free loopback port that answers every
 * request, so nothing leaves the machine and no name is looked up.
 *
 * Prints "READY" once the server listens, fetches for SECONDS, then prints
 * "DONE requests=N hosts=M" and exits.
 * Usage: java -cp CLASSES:JARS httpclient.HttpClientChurn SECONDS
 */
public class HttpClientChurn {
    /** Requests between purges of the idle connections. */
    static final int PURGE_EVERY = 500;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        System.setProperty("org.apache.commons.logging.Log", "org.apache.commons.logging.impl.NoOpLog");
        byte[] answer = "ok\n".getBytes(StandardCharsets.UTF_8);
        HttpServer proxy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        proxy.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, answer.length);
            try (OutputStream body = exchange.getResponseBody()) {
                body.write(answer);
            }
        });
        proxy.start();

        Protocol.registerProtocol("http", new Protocol("http", new UnboundSockets(), 80));
        MultiThreadedHttpConnectionManager connections = new MultiThreadedHttpConnectionManager();
        connections.getParams().setDefaultMaxConnectionsPerHost(2);
        connections.getParams().setMaxTotalConnections(1000);
        connections.getParams().setConnectionTimeout(10_000);
        connections.getParams().setSoTimeout(10_000);
        HttpClient client = new HttpClient(connections);
        client.getHostConfiguration().setProxy("127.0.0.1", proxy.getAddress().getPort());

        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long requests = 0;
        while (System.nanoTime() < end) {
            GetMethod get = new GetMethod("http://h" + (requests + 1) + ".example/");
            try {
                int status = client.executeMethod(get);
                byte[] body = get.getResponseBody();
                if (status != 200 || body.length != answer.length) {
                    throw new IllegalStateException("status " + status + ", " + body.length + " bytes");
                }
            } finally {
                get.releaseConnection();
            }
            requests++;
            if (requests % PURGE_EVERY == 0) {
                connections.closeIdleConnections(0);
                connections.deleteClosedConnections();
            }
        }
        connections.shutdown();
        proxy.stop(0);
        System.out.println("DONE requests=" + requests + " hosts=" + requests);
        System.out.flush();
    }

    /**
     * Sockets that connect without binding first. The library's own factory binds each socket to
     * port 0 before connecting, and a bind must find a port no socket holds, TIME_WAIT ones
     * included: with the 20,000 or so that one run leaves on loopback (the client closes first),
     * the next run's binds search the whole port range and it makes 100 requests a second
     * instead of 1,000. A plain connect may reuse a port whose old connection went elsewhere.
     */
    static final class UnboundSockets implements ProtocolSocketFactory {
        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return createSocket(host, port, null, 0, null);
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localAddress, int localPort)
                throws IOException {
            return createSocket(host, port, localAddress, localPort, null);
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localAddress, int localPort,
                HttpConnectionParams params) throws IOException {
            Socket socket = new Socket();
            socket.connect(new InetSocketAddress(host, port), params == null ? 0 : params.getConnectionTimeout());
            return socket;
        }
    }
}
