#include <gtest/gtest.h>

#include "report/command.h"

namespace kbv {
namespace report_format_test {

TEST(ReportFormat, FromTheOutputsExtension) {
  EXPECT_EQ(report_format("", "report.html"), "html");
  EXPECT_EQ(report_format("", "REPORT.HTM"), "html");
  EXPECT_EQ(report_format("", "rows.csv"), "csv");
  EXPECT_EQ(report_format("", "all.json"), "json");
  EXPECT_EQ(report_format("", "report.md"), "md");
  EXPECT_EQ(report_format("", ""), "md");          // stdout
  EXPECT_EQ(report_format("", "report"), "md");    // no extension
}

TEST(ReportFormat, AnExtensionKbvDoesNotWriteIsRefused) {
  // Markdown written into report.pdf would be a file no PDF reader opens.
  EXPECT_EQ(report_format("", "report.pdf"), "");
  EXPECT_EQ(report_format("", "report.xlsx"), "");
  // An explicit --format wins over the extension.
  EXPECT_EQ(report_format("md", "report.pdf"), "md");
  EXPECT_EQ(report_format("pdf", "report.md"), "");
}

}  // namespace report_format_test
}  // namespace kbv
