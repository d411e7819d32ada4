import java.util.ArrayList;
import java.util.List;

/**
 * Keeps large byte arrays, each made after a run of small short-lived allocations: the pattern
 * in which HotSpot's sampler before JDK 25 under-samples allocations made outside TLABs (it
 * charges them against the sampling countdown without the TLAB bytes allocated before them,
 * JDK-8356372). Then allocates a little garbage now and then, so GCs keep coming.
 * Usage: java LargeArrays SECONDS ARRAY_BYTES KEPT_BYTES GARBAGE_BYTES_BETWEEN
 */
public class LargeArrays {
    static final List<byte[]> KEPT = new ArrayList<>();
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        int size = Integer.parseInt(args[1]);
        long kept = Long.parseLong(args[2]);
        int between = Integer.parseInt(args[3]);
        for (long made = 0; made < kept; made += size) {
            for (int g = 0; g < between; g += 48) sink = new byte[32];
            KEPT.add(new byte[size]);
        }
        System.out.println("READY arrays=" + KEPT.size());
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10000; i++) sink = new byte[64];
            Thread.sleep(1);
        }
    }
}
