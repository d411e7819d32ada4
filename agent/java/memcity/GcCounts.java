package memcity;

import java.time.Duration;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/**
 * The agent's window on JFR's {@code jdk.ObjectCountAfterGC}: the collector's own count of live
 * objects per class, taken inside full GCs and G1 remark pauses, with each GC's name. The agent defines this class in
 * the application's JVM and registers the native methods; this class only starts an in-process
 * {@link RecordingStream} and hands every event to the agent. Nothing here prints.
 *
 * Compiled with {@code --release 14} by the agent's build, as {@code RecordingStream} needs JDK 14:
 * an older JDK refuses the class and the agent goes on without GC counts.
 */
public final class GcCounts {
    private GcCounts() {}

    /** One class's live objects and bytes counted by the GC {@code gcId} at {@code timeMs}. */
    static native void counted(long gcId, String className, long count, long bytes, long timeMs);

    /** Time the GC {@code gcId} spent counting (its "Report Object Count" phase), nanoseconds. */
    static native void phase(long gcId, long nanos);

    /**
     * The GC {@code gcId} was a collection named {@code name} (JFR's GC names: {@code G1Full},
     * {@code ParallelOld}, ...). Sent at its end, so a full GC's name comes with its counts; a G1
     * remark's counts come long before the end of their concurrent cycle.
     */
    static native void collected(long gcId, String name);

    /** Every event of the chunk just read has been handed over. */
    static native void flushed();

    /**
     * Starts the stream; returns it, for {@link #setEnabled} and {@link #stop}. Unless the agent
     * detaches, it ends with the JVM, whose shutdown closes JFR's recordings. The agent has put
     * JFR's repository in memcity's run directory first (agent/src/gc_counts/repository.rs): a
     * killed JVM would leave the stream's chunks in java.io.tmpdir.
     */
    public static Object start() {
        RecordingStream stream = new RecordingStream();
        stream.enable("jdk.ObjectCountAfterGC");
        // The phase that does the counting: level 1 in G1 remark, level 2 in full GCs (17.0.8+).
        stream.enable("jdk.GCPhasePauseLevel1");
        stream.enable("jdk.GCPhasePauseLevel2");
        // Which GCs were full ones: only their counts are exact (see the agent's gc_counts.rs).
        stream.enable("jdk.GarbageCollection");
        // The stream only needs what it has not read yet.
        stream.setMaxAge(Duration.ofSeconds(30));
        stream.setMaxSize(16L * 1024 * 1024);
        stream.onEvent("jdk.ObjectCountAfterGC", GcCounts::onCount);
        stream.onEvent("jdk.GCPhasePauseLevel1", GcCounts::onPhase);
        stream.onEvent("jdk.GCPhasePauseLevel2", GcCounts::onPhase);
        stream.onEvent("jdk.GarbageCollection", GcCounts::onCollection);
        stream.onFlush(GcCounts::flushed);
        // Not startAsync(): its thread is not a daemon and would keep the application's JVM
        // from exiting. The stream runs on a daemon thread of ours instead.
        Thread thread = new Thread(stream::start, "memcity-jfr");
        thread.setDaemon(true);
        thread.start();
        return stream;
    }

    private static void onCount(RecordedEvent event) {
        counted(
                event.getLong("gcId"),
                event.getClass("objectClass").getName(),
                event.getLong("count"),
                event.getLong("totalSize"),
                event.getStartTime().toEpochMilli());
    }

    private static void onCollection(RecordedEvent event) {
        collected(event.getLong("gcId"), event.getString("name"));
    }

    private static void onPhase(RecordedEvent event) {
        if ("Report Object Count".equals(event.getString("name"))) {
            phase(event.getLong("gcId"), event.getDuration().toNanos());
        }
    }

    /** Closes the stream (a detach); its thread then ends. */
    public static void stop(Object stream) {
        ((RecordingStream) stream).close();
    }

    /** Turns the counting on or off for the following GCs (counting lengthens their pauses). */
    public static void setEnabled(Object stream, boolean on) {
        RecordingStream s = (RecordingStream) stream;
        if (on) {
            s.enable("jdk.ObjectCountAfterGC");
        } else {
            s.disable("jdk.ObjectCountAfterGC");
        }
    }
}
