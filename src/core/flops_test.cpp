#include "core/flops.h"

#include <gtest/gtest.h>

#include "core/test_builder.h"

namespace gpuscope {
namespace {

double flops_of(std::string_view name, std::vector<std::vector<int64_t>> shapes) {
  testing::TraceBuilder b;
  b.op(0, 1, name, std::move(shapes), "float");
  const Trace t = b.build();
  return matmul_flops(t, t.host_events[0]).value_or(-1);
}

TEST(Flops, MatmulFamily) {
  EXPECT_EQ(flops_of("aten::mm", {{3, 5}, {5, 7}}), 2.0 * 3 * 5 * 7);
  EXPECT_EQ(flops_of("aten::addmm", {{7}, {3, 5}, {5, 7}}), 2.0 * 3 * 5 * 7);
  EXPECT_EQ(flops_of("aten::bmm", {{2, 3, 5}, {2, 5, 7}}), 2.0 * 2 * 3 * 5 * 7);
  EXPECT_EQ(flops_of("aten::baddbmm", {{2, 3, 7}, {2, 3, 5}, {2, 5, 7}}), 2.0 * 2 * 3 * 5 * 7);
  EXPECT_EQ(flops_of("aten::linear", {{4, 10, 5}, {7, 5}, {7}}), 2.0 * 40 * 5 * 7);
  EXPECT_EQ(flops_of("aten::matmul", {{8, 4, 3, 5}, {5, 7}}), 2.0 * 32 * 3 * 5 * 7);
  EXPECT_EQ(flops_of("aten::matmul", {{5}, {5, 7}}), 2.0 * 5 * 7);
  EXPECT_EQ(flops_of("aten::add", {{3, 5}, {3, 5}}), -1);
  EXPECT_EQ(flops_of("aten::mm", {{3, 5}}), -1);  // Missing operand.
}

TEST(Flops, ScaledDotProductAttention) {
  // q [B=2,H=4,T=8,D=16], k/v [2,4,S=8,16]: 2*B*H*T*S*D twice.
  const double fwd = 2.0 * 2 * 4 * 8 * 8 * 16 * 2;
  EXPECT_EQ(flops_of("aten::_scaled_dot_product_flash_attention", {{2, 4, 8, 16}, {2, 4, 8, 16}, {2, 4, 8, 16}}), fwd);
  EXPECT_EQ(flops_of("aten::_scaled_dot_product_flash_attention_backward",
                     {{2, 4, 8, 16}, {2, 4, 8, 16}, {2, 4, 8, 16}, {2, 4, 8, 16}}),
            2 * fwd);
  // The flash kernel's own entry point takes [B,T,H,D].
  EXPECT_EQ(flops_of("aten::_flash_attention_forward", {{2, 8, 4, 16}, {2, 8, 4, 16}, {2, 8, 4, 16}}), fwd);
}

// The records the Kineto reader's rules make: a shared 2-D right operand is one GEMM over all
// rows; attention backward is its four gradient products; bad shapes make none.
TEST(Flops, AtenMatmulRecords) {
  testing::TraceBuilder b;
  b.op(0, 1, "aten::matmul", {{8, 4, 3, 5}, {5, 7}}, "c10::BFloat16");
  b.op(2, 3, "aten::matmul", {{8, 3, 5}, {8, 5, 7}}, "float");
  b.op(4, 5, "aten::_scaled_dot_product_flash_attention_backward",
       {{2, 4, 8, 16}, {2, 4, 8, 16}, {2, 4, 6, 16}, {2, 4, 6, 32}}, "c10::Half");
  b.op(6, 7, "aten::mm", {{3, -5}, {-5, 7}}, "float");
  b.op(8, 9, "aten::bmm", {{1LL << 62, 2, 2}, {1LL << 62, 2, 2}}, "float");
  b.op(10, 11, "aten::matmul", {{1LL << 40, 1LL << 40, 2, 2}, {2, 2}}, "float");
  const Trace t = b.build();
  const auto m0 = t.matmuls_of(t.host_events[0]);
  ASSERT_EQ(m0.size(), 1u);
  EXPECT_EQ(m0[0].batch, 1);
  EXPECT_EQ(m0[0].m, 96);
  EXPECT_EQ(m0[0].n, 7);
  EXPECT_EQ(m0[0].k, 5);
  EXPECT_EQ(m0[0].dtype, Precision::kBf16);
  EXPECT_EQ(t.strings.view(m0[0].source), "aten::matmul");
  const auto m1 = t.matmuls_of(t.host_events[1]);
  ASSERT_EQ(m1.size(), 1u);
  EXPECT_EQ(m1[0].batch, 8);
  EXPECT_EQ(m1[0].m, 3);
  const auto m2 = t.matmuls_of(t.host_events[2]);
  ASSERT_EQ(m2.size(), 4u);                  // dP, dV, dQ, dK.
  EXPECT_EQ(m2[0].dtype, Precision::kFp16);  // Of q, not of grad_out.
  double sum = 0;
  for (const Matmul& m : m2) {
    EXPECT_EQ(m.batch, 8);
    sum += m.flops();
  }
  // Twice forward: QK^T 2*B*H*T*S*D plus PV 2*B*H*T*S*Dv, with T=8, S=6, D=16, Dv=32.
  EXPECT_EQ(sum, 2 * (2.0 * 8 * 8 * 6 * 16 + 2.0 * 8 * 8 * 6 * 32));
  EXPECT_EQ(t.host_events[3].num_matmuls, 0);  // Negative dimension.
  EXPECT_EQ(t.host_events[4].num_matmuls, 1);  // A batch this large still fits int64.
  EXPECT_EQ(t.host_events[5].num_matmuls, 0);  // Rows overflow int64.
}

TEST(Flops, ModelSpec) {
  auto m = parse_model_spec("gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_DOUBLE_EQ(m->flops_per_token(), 6 * 124e6 + 12.0 * 12 * 12 * 64 * 1024);
  EXPECT_DOUBLE_EQ(m->flops_per_step(), m->flops_per_token() * 16 * 1024);
  EXPECT_NE(m->formula().find("6N + 12*L*H*Q*T"), std::string::npos);
  EXPECT_FALSE(parse_model_spec("gpt:params=124M").ok());
  EXPECT_FALSE(parse_model_spec("bert:params=1").ok());
  EXPECT_FALSE(parse_model_spec("gpt:params=x,layers=1,heads=1,dmodel=1,seq=1,batch=1").ok());
  EXPECT_FALSE(parse_model_spec("gpt:params=-1,layers=1,heads=1,dmodel=1,seq=1,batch=1").ok());
  const auto bad = parse_model_spec("gpt:foo=1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown key 'foo'"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope
