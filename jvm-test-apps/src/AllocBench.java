/**
 * Allocation-heavy throughput benchmark: builds short-lived objects at full speed while a bounded
 * ring keeps some of them alive long enough to be promoted, so young and old collections both
 * happen. After a warm-up it counts operations for the run time and prints `OPS <per second>`.
 * Usage: java AllocBench SECONDS [WARMUP_SECONDS]
 */
public class AllocBench {
    static final class Order {
        final long id;
        final String customer;
        final int[] lines;
        Order(long id, String customer, int[] lines) { this.id = id; this.customer = customer; this.lines = lines; }
    }

    static volatile long sink;

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 10;
        double warmup = args.length > 1 ? Double.parseDouble(args[1]) : 3;
        Order[] ring = new Order[200_000];
        System.out.println("READY");
        System.out.flush();
        long ops = 0;
        long start = System.nanoTime();
        long measureFrom = start + (long) (warmup * 1e9);
        long end = measureFrom + (long) (seconds * 1e9);
        long counted = 0;
        boolean measuring = false;
        long n = 0;
        while (true) {
            for (int i = 0; i < 1000; i++, n++) {
                Order o = new Order(n, "customer-" + (n & 1023), new int[(int) (n & 15) + 1]);
                ring[(int) (n % ring.length)] = o;
                sink += o.lines.length + o.customer.length();
            }
            ops += 1000;
            long now = System.nanoTime();
            if (!measuring && now >= measureFrom) { measuring = true; counted = ops; }
            if (now >= end) break;
        }
        double perSecond = (ops - counted) / seconds;
        System.out.println("OPS " + (long) perSecond);
    }
}
