import java.util.LinkedList;
import java.util.List;

/**
 * The classic leak: Person objects appended to a static LinkedList and never removed, with
 * short-lived garbage around them so young GCs are frequent.
 * Usage: java LinkedListLeak SECONDS [PERSONS_PER_SECOND]
 */
public class LinkedListLeak {
    static final List<Person> PEOPLE = new LinkedList<>();
    static volatile long sink;

    static final class Person {
        final String firstName;
        final String lastName;

        Person(String firstName, String lastName) {
            this.firstName = firstName;
            this.lastName = lastName;
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        int perSecond = args.length > 1 ? Integer.parseInt(args[1]) : 20000;
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long n = 0;
        long tickStart = System.nanoTime();
        while (System.nanoTime() < end) {
            for (int i = 0; i < perSecond / 100; i++) {
                PEOPLE.add(new Person("first" + n, "last" + n));
                n++;
                // Garbage that dies young: keeps the young generation busy.
                byte[] scratch = new byte[256];
                sink += scratch.length + new StringBuilder("tmp").append(n).toString().length();
            }
            long next = tickStart + 10_000_000L;
            long now = System.nanoTime();
            if (next > now) {
                Thread.sleep((next - now) / 1_000_000L, (int) ((next - now) % 1_000_000L));
            }
            tickStart = next;
        }
        System.out.println("DONE people=" + PEOPLE.size());
    }
}
