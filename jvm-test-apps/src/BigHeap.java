/**
 * A large, quiet live heap for measuring walk cost: OBJECTS live objects (half small records,
 * half their byte arrays, chained so the walk follows real references), then nothing.
 * Usage: java BigHeap SECONDS OBJECTS
 */
public class BigHeap {
    static final class Item {
        Item next;
        final byte[] payload;
        Item(Item next, byte[] payload) { this.next = next; this.payload = payload; }
    }

    static Item head;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 60;
        long objects = args.length > 1 ? Long.parseLong(args[1]) : 1_000_000;
        for (long i = 0; i < objects / 2; i++) head = new Item(head, new byte[8]);
        System.gc();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) Thread.sleep(50);
        System.out.println("DONE " + (head != null));
    }
}
