// The HTTP endpoint over the fake NVML: /metrics, /healthz, listen parsing, bind errors.
#include "exporter/server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include "core/text.h"
#include "nvml/fake_nvml_testing.h"

namespace gpuscope::exporter {
namespace {

std::unique_ptr<nvml::Sampler> fake_sampler(const char* fixture = "synthetic_2gpu.txt") {
  nvml::testing::use_fixture(nvml::testing::testdata(fixture));
  auto api = nvml::NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  EXPECT_TRUE(api.ok());
  nvml::SamplerOptions so;
  so.proc_root = nvml::testing::testdata("proc");
  auto s = nvml::Sampler::open(std::move(*api), so);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

TEST(ParseListen, AcceptsHostPortForms) {
  auto a = parse_listen("127.0.0.1:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  auto b = parse_listen("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  auto every = parse_listen(":9464");  // Every interface.
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->host, "");
  EXPECT_EQ(every->port, 9464);
}

TEST(ParseListen, RejectsWithOneLine) {
  for (const char* bad : {"9464", "[]:9464", "localhost:http", "127.0.0.1:70000", "h:", ":"}) {
    auto a = parse_listen(bad);
    EXPECT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("--listen"), std::string::npos);
    EXPECT_EQ(a.status().message().find('\n'), std::string::npos);
  }
}

TEST(LiveExporter, ServesMetricsAndHealth) {
  ServeOptions o;
  o.listen = {"127.0.0.1", 0};
  o.interval_ns = 150'000'000;
  LiveExporter exporter(fake_sampler(), o);
  ASSERT_TRUE(exporter.start().ok());
  ASSERT_GT(exporter.port(), 0);
  httplib::Client client("127.0.0.1", exporter.port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_NE(res->body.find("gpuscope_sm_active_ratio{"), std::string::npos);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  // Sampling continues in the background: the timestamp moves.
  std::string first = exporter.metrics_text();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_NE(exporter.metrics_text(), first);
  exporter.stop();
}

// The command label is the executable name unless opted in; a hostile one stays valid UTF-8.
TEST(LiveExporter, CommandLabelIsTheExecutableByDefault) {
  for (auto policy : {nvml::CommandLine::kExecutable, nvml::CommandLine::kArguments}) {
    ServeOptions o;
    o.listen = {"127.0.0.1", 0};
    o.interval_ns = 150'000'000;
    o.command_line = policy;
    o.proc_root = nvml::testing::testdata("proc");
    LiveExporter exporter(fake_sampler("synthetic_hostile.txt"), o);
    ASSERT_TRUE(exporter.start().ok());
    std::string text = exporter.metrics_text();
    EXPECT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(text.find("hunter"), std::string::npos);
    if (policy == nvml::CommandLine::kExecutable) {
      EXPECT_NE(text.find(R"(pid="4242",command="python3",)"), std::string::npos) << text;
      EXPECT_NE(text.find("pid=\"4444\",command=\"tr\xef\xbf\xbd"
                          "ain\x1b[2J\","),
                std::string::npos);
      EXPECT_EQ(text.find("train.py"), std::string::npos);
    } else {
      EXPECT_NE(text.find(R"(pid="4242",command="python3 train.py --batch 16",)"), std::string::npos);
    }
  }
}

TEST(LiveExporter, PortInUseIsAnError) {
  ServeOptions o;
  o.listen = {"127.0.0.1", 0};
  o.interval_ns = 150'000'000;
  LiveExporter first(fake_sampler(), o);
  ASSERT_TRUE(first.start().ok());
  ServeOptions o2 = o;
  o2.listen.port = first.port();
  LiveExporter second(fake_sampler(), o2);
  Status st = second.start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot listen on 127.0.0.1:"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace gpuscope::exporter
