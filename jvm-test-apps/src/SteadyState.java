/**
 * Heavy allocation with bounded retention: a fixed ring of recent messages is overwritten in
 * place, and everything else dies young. Nothing here should look like a leak.
 * Usage: java SteadyState SECONDS [RING_SIZE [KEEPERS]]
 * KEEPERS objects ({@code SteadyState$Keeper}) are made before READY and kept to the end: a
 * population that lives long, beside the ring's short-lived messages.
 */
public class SteadyState {
    static final class Message {
        final String topic;
        final byte[] payload;
        Message(String topic, byte[] payload) { this.topic = topic; this.payload = payload; }
    }

    static volatile long sink;
    /** The ring, reachable until the JVM exits: a snapshot taken as main returns (a periodic
     *  walk racing the exit) still sees it whole, as the tests expect of a steady app. */
    static Message[] ring;

    static final class Keeper {
        final long id;
        Keeper(long id) { this.id = id; }
    }

    static Keeper[] keepers;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int ringSize = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        int keeperCount = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        keepers = new Keeper[keeperCount];
        for (int i = 0; i < keeperCount; i++) keepers[i] = new Keeper(i);
        ring = new Message[ringSize];
        // Fill the ring before READY, so its size is the same from the first snapshot on.
        for (int i = 0; i < ringSize; i++) ring[i] = new Message("topic-" + (i % 64), new byte[128]);
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++, n++) {
                ring[(int) (n % ringSize)] = new Message("topic-" + (n % 64), new byte[128]);
                StringBuilder garbage = new StringBuilder();
                for (int j = 0; j < 8; j++) garbage.append(j).append(',');
                sink += garbage.length() + new int[32].length;
            }
            Thread.sleep(1);
        }
        System.out.println("DONE messages=" + n);
    }
}
