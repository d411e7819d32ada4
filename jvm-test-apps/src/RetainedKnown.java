/**
 * Retained sizes known by construction, for a heap dump's dominator tree: ALONE's owner holds
 * an array of N long[4]; SHARING's owner holds an array of the first half of them. So ALONE
 * retains its array and the second half (only it reaches them), the first half is shared by
 * two roots (dominated by none of them), and SHARING retains its array alone.
 * Usage: java RetainedKnown SECONDS
 */
public class RetainedKnown {
    static final int N = 10_000;

    static final class Owner {
        final Object[] items;
        Owner(Object[] items) { this.items = items; }
    }

    static Owner ALONE;
    static Owner SHARING;

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 30;
        build();
        System.gc();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) Thread.sleep(50);
        System.out.println("DONE owners=" + ALONE.items.length + "," + SHARING.items.length);
    }

    /** In a method of its own: main's frame, a GC root while it sleeps, holds none of it. */
    static void build() {
        Object[] all = new Object[N];
        for (int i = 0; i < N; i++) all[i] = new long[4];
        Object[] half = new Object[N / 2];
        System.arraycopy(all, 0, half, 0, N / 2);
        ALONE = new Owner(all);
        SHARING = new Owner(half);
    }
}
