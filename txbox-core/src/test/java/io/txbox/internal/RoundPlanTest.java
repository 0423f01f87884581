package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.spi.BucketRead;
import io.txbox.spi.BucketState;
import io.txbox.spi.Checkpoint;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class RoundPlanTest {
  private static List<BucketState> buckets(int count) {
    return IntStream.range(0, count).mapToObj(b -> new BucketState(b, Checkpoint.START, 0, null)).toList();
  }

  @Test
  void withNothingKnownTheBatchIsSplitEvenly() {
    List<BucketRead> reads = new RoundPlan(1000).reads(buckets(64));
    assertThat(reads).hasSize(64).allSatisfy(r -> assertThat(r.limit()).isEqualTo(15));
  }

  @Test
  void aSingleBusyBucketGetsTheWholeBatchAndTheOthersAreProbed() {
    RoundPlan plan = new RoundPlan(1000);
    plan.rememberBusy(Set.of(7));
    List<BucketRead> reads = plan.reads(buckets(64));
    assertThat(reads.get(7).limit()).isEqualTo(1000);
    assertThat(reads.stream().filter(r -> r.bucket() != 7)).allSatisfy(r -> assertThat(r.limit()).isEqualTo(15));
    assertThat(reads.stream().mapToInt(BucketRead::limit).sum()).isLessThanOrEqualTo(2000);
  }
}
