import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The easyTravel leak from the Memory Cities paper: a cache keyed by QueryKey, which lacks
 * equals/hashCode, so every lookup misses and adds a new entry; the values are lists of Location
 * objects holding Dates.
 * Usage: java CacheKeyLeak SECONDS [QUERIES_PER_SECOND]
 */
public class CacheKeyLeak {
    static final class QueryKey {
        final String destination;
        final long fromDay;
        QueryKey(String destination, long fromDay) { this.destination = destination; this.fromDay = fromDay; }
        // The bug: no equals() and hashCode(), so equal queries are different keys.
    }

    static final class Location {
        final String name;
        final Date availableFrom;
        Location(String name, Date availableFrom) { this.name = name; this.availableFrom = availableFrom; }
    }

    static final Map<QueryKey, List<Location>> CACHE = new ConcurrentHashMap<>();
    static final String[] DESTINATIONS = {"Linz", "Vienna", "Graz", "Salzburg", "Innsbruck"};
    static volatile long sink;

    static List<Location> search(String destination, long day) {
        return CACHE.computeIfAbsent(new QueryKey(destination, day), k -> {
            List<Location> result = new ArrayList<>(3);
            for (int i = 0; i < 3; i++) {
                result.add(new Location(destination + " hotel " + i, new Date(day * 86_400_000L)));
            }
            return result;
        });
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int perSecond = args.length > 1 ? Integer.parseInt(args[1]) : 4000;
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        long tick = System.nanoTime();
        while (System.nanoTime() < end) {
            for (int i = 0; i < perSecond / 100; i++) {
                // Only a handful of distinct queries: a working cache would stay tiny.
                List<Location> hits = search(DESTINATIONS[(int) (n % DESTINATIONS.length)], n % 7);
                sink += hits.size() + new StringBuilder("render ").append(n).toString().length();
                n++;
            }
            tick += 10_000_000L;
            long wait = tick - System.nanoTime();
            if (wait > 0) Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
        System.out.println("DONE cached=" + CACHE.size());
    }
}
