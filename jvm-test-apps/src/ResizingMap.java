import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Maps that resize and are dropped while memcity's path search reads them: a static
 * ConcurrentHashMap filled to 200,000 products (each resize drops the old table and its nodes),
 * held a moment, then replaced by a new one, over and over. Between two slices of the search
 * the objects on its stack may be gone; the agent must carry on, never crash the JVM.
 * Usage: java ResizingMap SECONDS
 */
public class ResizingMap {
    static final class Product {
        final String sku;
        final byte[] details;

        Product(int i) {
            sku = "sku-" + i;
            details = new byte[48];
            details[0] = (byte) i;
        }
    }

    static volatile Map<String, Product> catalog = new ConcurrentHashMap<>();

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 15;
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        int maps = 0;
        while (System.nanoTime() < end) {
            Map<String, Product> next = new ConcurrentHashMap<>();
            catalog = next;
            for (int i = 0; i < 200_000 && System.nanoTime() < end; i++) {
                Product p = new Product(i);
                next.put(p.sku, p);
                if (i % 20_000 == 0) {
                    Thread.sleep(20);
                }
            }
            maps++;
            Thread.sleep(300);
        }
        System.out.println("DONE maps=" + maps + " size=" + catalog.size());
    }
}
