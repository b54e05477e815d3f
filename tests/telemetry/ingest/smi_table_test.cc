// The nvidia-smi table reader (smi_table.h): tables as drivers 440, 450-52x and 550 print them,
// in a Slurm .out between training lines, with and without date lines.
#include "telemetry/ingest/smi_table.h"

#include <gtest/gtest.h>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- nvidia-smi tables

// Layouts as drivers print them: 450-52x (narrow, MIG M. row), 440 (no third row), 550 (wide).
const char* kTable450 =
    "Tue Oct 27 06:02:13 2020       \n"
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 450.80.02    Driver Version: 450.80.02    CUDA Version: 11.0     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "|                               |                      |               MIG M. |\n"
    "|===============================+======================+======================|\n"
    "|   0  NVIDIA A100 80G...  On   | 00000000:35:00.0 Off |                    0 |\n"
    "| N/A   46C    P0   273W / 300W |  57828MiB / 81920MiB |     97%      Default |\n"
    "|                               |                      |             Disabled |\n"
    "+-------------------------------+----------------------+----------------------+\n"
    "|   1  NVIDIA A100 80G...  On   | 00000000:36:00.0 Off |                    0 |\n"
    "| N/A   44C    P0    N/A /  N/A |  51826MiB / 81920MiB |      0%      Default |\n"
    "|                               |                      |             Disabled |\n"
    "+-------------------------------+----------------------+----------------------+\n"
    "                                                                               \n"
    "+-----------------------------------------------------------------------------+\n"
    "| Processes:                                                                  |\n"
    "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
    "|        ID   ID                                                   Usage      |\n"
    "|=============================================================================|\n"
    "|    0   N/A  N/A     12345      C   python                          57826MiB |\n"
    "+-----------------------------------------------------------------------------+\n";

const char* kTable550 =
    "Tue Oct 27 06:02:18 2020\n"
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n"
    "|   0  NVIDIA A100 80GB PCIe          On  |   00000000:35:00.0 Off |                    0 |\n"
    "|  0%   29C    P8             23W /  300W |       1MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |                  N/A |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   1  NVIDIA A100 80GB PCIe          On  |   00000000:36:00.0 Off |                    0 |\n"
    "|  0%   30C    P8             24W /  300W |       1MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |                  N/A |\n"
    "+-----------------------------------------+------------------------+----------------------+\n";

TEST(SmiTable, SlurmOutWithTablesBetweenTrainingLines) {
  TempDir dir;
  const std::string p = dir / "slurm-4242.out";
  WriteFile(p, std::string("srun: job 4242 queued and waiting for resources\n"
                           "| epoch | loss |\n|   1   | 2.30 |\n"
                           "step 100 loss 2.31\n") +
                   kTable450 + "step 200 loss 2.10\n" + kTable550 + "done\n");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(p, {})), "smi-table");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  const GpuSample& a = d.batches[0][0];
  EXPECT_EQ(FormatIsoMs(a.timestamp_ms), "2020-10-27T06:02:13.000");
  EXPECT_DOUBLE_EQ(*a.power_w, 273);
  EXPECT_DOUBLE_EQ(*a.power_limit_w, 300);
  EXPECT_DOUBLE_EQ(*a.mem_used_mib, 57828);
  EXPECT_DOUBLE_EQ(*a.mem_total_mib, 81920);
  EXPECT_DOUBLE_EQ(*a.util_gpu_pct, 97);
  EXPECT_DOUBLE_EQ(*a.temperature_c, 46);
  EXPECT_EQ(*a.pstate, 0);
  EXPECT_FALSE(d.batches[0][1].power_w.has_value());  // "N/A /  N/A"
  const GpuSample& b = d.batches[1][1];
  EXPECT_EQ(FormatIsoMs(b.timestamp_ms), "2020-10-27T06:02:18.000");
  EXPECT_DOUBLE_EQ(*b.power_w, 24);
  EXPECT_EQ(*b.pstate, 8);
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA A100 80G...");
  EXPECT_EQ(d.gpus[1].pci_bus_id, "00000000:36:00.0");
  EXPECT_THAT(d.description, HasSubstr("nvidia-smi tables: 2 tables"));
}

TEST(SmiTable, Driver440WithoutMigRowAndWithoutDateNeedsInterval) {
  TempDir dir;
  const std::string p = dir / "t.txt";
  const std::string t440 =
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 440.100      Driver Version: 440.100      CUDA Version: 10.2     |\n"
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|===============================+======================+======================|\n"
      "|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |\n"
      "| N/A   34C    P0    23W / 300W |      0MiB / 16160MiB |      0%      Default |\n"
      "+-------------------------------+----------------------+----------------------+\n";
  WriteFile(p, t440 + "\n" + t440);
  Drained none = ReadOne(p);
  ASSERT_FALSE(none.status.ok());
  EXPECT_THAT(none.status.message(), HasSubstr(p + ":2: an nvidia-smi table without a date line"));
  Drained d = ReadOne(p, 5000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[1].timestamp_ms, 5000);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_limit_w, 300);
  EXPECT_EQ(d.gpus[0].name, "Tesla V100-SXM2...");
}

TEST(SmiTable, DateLine) {
  EXPECT_EQ(FormatIsoMs(*ingest::ParseSmiDateLine("Wed Mar  2 10:00:00 2022       ")),
            "2022-03-02T10:00:00.000");
  EXPECT_FALSE(ingest::ParseSmiDateLine("step 100 loss 2.31 done").has_value());
}

}  // namespace
}  // namespace ww::ingest_tests
