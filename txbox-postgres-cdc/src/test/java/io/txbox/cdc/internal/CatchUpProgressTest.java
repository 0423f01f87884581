package io.txbox.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.spi.Checkpoint;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class CatchUpProgressTest {
  private final Instant takenAt = Instant.parse("2026-11-30T10:00:00.123456789Z");
  private final SlotCheckpoints.Mark from = new SlotCheckpoints.Mark(700, new long[] {690}, 0x1566F18, 1, false,
      Instant.parse("2026-11-30T09:59:59.654321Z"));

  @Test
  void whatTheBrokerKeepsReadsBackAsWrittenAndHoldsOnlyForTheCheckpointItStartedFrom() {
    SlotCheckpoints.Candidate snapshot = new SlotCheckpoints.Candidate(760, new long[] {752, 755}, 0x1600000, 2,
        takenAt);
    CatchUpProgress progress = new CatchUpProgress(from.lsn(), from.takenAt(), 31, 752, 110, snapshot);
    CatchUpProgress read = CatchUpProgress.parse(new Checkpoint(752, 110), progress.note());
    assertThat(read.bucket()).isEqualTo(31);
    assertThat(read.tx()).isEqualTo(752);
    assertThat(read.position()).isEqualTo(110);
    assertThat(read.snapshot().deliveredBelow()).isEqualTo(760);
    assertThat(read.snapshot().stillOpen()).containsExactly(752, 755);
    assertThat(read.snapshot().takenAt()).as("to the microsecond").isEqualTo(Instant.parse("2026-11-30T10:00:00.123456Z"));
    assertThat(read.startedFrom(from)).isTrue();
    SlotCheckpoints.Mark later = new SlotCheckpoints.Mark(760, new long[0], 0x1600000, 2, false, takenAt);
    assertThat(read.startedFrom(later)).as("the catch-up was done: its snapshot is the checkpoint now").isFalse();
  }

  @Test
  void noneIsNullAndGarbageIsRefused() {
    assertThat(CatchUpProgress.parse(null, null)).isNull();
    assertThatThrownBy(() -> CatchUpProgress.parse(new Checkpoint(1, 1), "1|x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("did not write");
  }
}
