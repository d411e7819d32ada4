import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.LinkedList;
import java.util.List;

/**
 * A leak whose last part no GC has seen when the JVM exits: Person objects appended to a static
 * LinkedList, first FIRST of them with short-lived garbage around them, then a full GC
 * (System.gc()), then TAIL more with no garbage, which a young generation as large as the test
 * gives it holds without another GC. The agent's last snapshot (at VM death) must count the
 * tail, although no GC has judged it. Prints READY, then DONE with what the list holds at exit
 * and how many GCs ran during the tail (the test needs none).
 * Usage: java LeakPastLastGc FIRST TAIL
 */
public class LeakPastLastGc {
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

    static long gcs() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        int first = Integer.parseInt(args[0]);
        int tail = Integer.parseInt(args[1]);
        System.out.println("READY");
        System.out.flush();
        long n = 0;
        for (; n < first; n++) {
            PEOPLE.add(new Person("first" + n, "last" + n));
            // Garbage that dies young, as in LinkedListLeak.
            byte[] scratch = new byte[256];
            sink += scratch.length + new StringBuilder("tmp").append(n).toString().length();
        }
        System.gc();
        // Let the agent see the GC (it may walk the heap now) before the tail.
        Thread.sleep(500);
        long before = gcs();
        for (; n < first + tail; n++) {
            PEOPLE.add(new Person("first" + n, "last" + n));
        }
        long during = gcs() - before;
        // The application idles before it exits: the last snapshot comes well after the last GC.
        Thread.sleep(1000);
        System.out.println("DONE people=" + PEOPLE.size() + " gcs_in_tail=" + during);
    }
}
