#include "gpt/gpt_ref.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::gpt::ref {

void EncoderForward(double* out, const int* inp, const double* wte, const double* wpe, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const double* we = wte + size_t(inp[b * T + t]) * C;
      const double* pe = wpe + size_t(t) * C;
      double* o = out + (size_t(b) * T + t) * C;
      for (int c = 0; c < C; ++c) o[c] = we[c] + pe[c];
    }
}

void EncoderBackward(double* dwte, double* dwpe, const double* dout, const int* inp, int B, int T, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const double* d = dout + (size_t(b) * T + t) * C;
      double* dwe = dwte + size_t(inp[b * T + t]) * C;
      double* dpe = dwpe + size_t(t) * C;
      for (int c = 0; c < C; ++c) {
        dwe[c] += d[c];
        dpe[c] += d[c];
      }
    }
}

void LayerNormForward(double* out, double* mean, double* rstd, const double* inp, const double* w, const double* b,
                      int rows, int C) {
  for (int r = 0; r < rows; ++r) {
    const double* x = inp + size_t(r) * C;
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    double v = 0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    double* o = out + size_t(r) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * w[c] + b[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

void LayerNormBackward(double* dinp, double* dw, double* db, const double* dout, const double* inp, const double* w,
                       const double* mean, const double* rstd, int rows, int C) {
  for (int r = 0; r < rows; ++r) {
    const double* x = inp + size_t(r) * C;
    const double* d = dout + size_t(r) * C;
    double* dx = dinp + size_t(r) * C;
    double dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c) {
      const double norm = (x[c] - mean[r]) * rstd[r];
      const double dnorm = w[c] * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; ++c) {
      const double norm = (x[c] - mean[r]) * rstd[r];
      const double dnorm = w[c] * d[c];
      db[c] += d[c];
      dw[c] += norm * d[c];
      dx[c] += rstd[r] * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
    }
  }
}

void MatmulForward(double* out, const double* inp, const double* w, const double* bias, int rows, int C, int OC) {
  for (int r = 0; r < rows; ++r) {
    const double* x = inp + size_t(r) * C;
    for (int o = 0; o < OC; ++o) {
      const double* wr = w + size_t(o) * C;
      double s = bias ? bias[o] : 0.0;
      for (int c = 0; c < C; ++c) s += x[c] * wr[c];
      out[size_t(r) * OC + o] = s;
    }
  }
}

void MatmulBackward(double* dinp, double* dw, double* dbias, const double* dout, const double* inp, const double* w,
                    int rows, int C, int OC) {
  for (int r = 0; r < rows; ++r) {
    const double* d = dout + size_t(r) * OC;
    const double* x = inp + size_t(r) * C;
    double* dx = dinp + size_t(r) * C;
    for (int o = 0; o < OC; ++o) {
      const double* wr = w + size_t(o) * C;
      double* dwr = dw + size_t(o) * C;
      for (int c = 0; c < C; ++c) {
        dx[c] += d[o] * wr[c];
        dwr[c] += d[o] * x[c];
      }
      if (dbias) dbias[o] += d[o];
    }
  }
}

void AttentionForward(double* out, double* att, const double* qkv, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(double(HS));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* q = qkv + (size_t(b) * T + t) * 3 * C + h * HS;
        double* a = att + ((size_t(b) * NH + h) * T + t) * T;
        double mx = -1e300;
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* k = qkv + (size_t(b) * T + t2) * 3 * C + C + h * HS;
          double s = 0;
          for (int i = 0; i < HS; ++i) s += q[i] * k[i];
          a[t2] = s * scale;
          mx = std::max(mx, a[t2]);
        }
        double sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) sum += (a[t2] = std::exp(a[t2] - mx));
        for (int t2 = 0; t2 < T; ++t2) a[t2] = t2 <= t ? a[t2] / sum : 0.0;
        double* o = out + (size_t(b) * T + t) * C + h * HS;
        for (int i = 0; i < HS; ++i) o[i] = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* v = qkv + (size_t(b) * T + t2) * 3 * C + 2 * C + h * HS;
          for (int i = 0; i < HS; ++i) o[i] += a[t2] * v[i];
        }
      }
}

void AttentionBackward(double* dqkv, const double* dout, const double* qkv, const double* att, int B, int T, int C,
                       int NH) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(double(HS));
  std::vector<double> datt(T), dpre(T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* a = att + ((size_t(b) * NH + h) * T + t) * T;
        const double* d = dout + (size_t(b) * T + t) * C + h * HS;
        // out = Σ a[t2] v[t2]  →  datt, dv
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* v = qkv + (size_t(b) * T + t2) * 3 * C + 2 * C + h * HS;
          double* dv = dqkv + (size_t(b) * T + t2) * 3 * C + 2 * C + h * HS;
          double s = 0;
          for (int i = 0; i < HS; ++i) {
            s += d[i] * v[i];
            dv[i] += a[t2] * d[i];
          }
          datt[t2] = s;
        }
        // softmax backward
        double dot = 0;
        for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * datt[t2];
        for (int t2 = 0; t2 <= t; ++t2) dpre[t2] = a[t2] * (datt[t2] - dot);
        // pre = scale · q·k
        const double* q = qkv + (size_t(b) * T + t) * 3 * C + h * HS;
        double* dq = dqkv + (size_t(b) * T + t) * 3 * C + h * HS;
        for (int t2 = 0; t2 <= t; ++t2) {
          const double* k = qkv + (size_t(b) * T + t2) * 3 * C + C + h * HS;
          double* dk = dqkv + (size_t(b) * T + t2) * 3 * C + C + h * HS;
          for (int i = 0; i < HS; ++i) {
            dq[i] += dpre[t2] * k[i] * scale;
            dk[i] += dpre[t2] * q[i] * scale;
          }
        }
      }
}

namespace {
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2/pi)
}

void GeluForward(double* out, const double* inp, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double x = inp[i];
    out[i] = 0.5 * x * (1.0 + std::tanh(kGeluScale * (x + 0.044715 * x * x * x)));
  }
}

void GeluBackward(double* dinp, const double* inp, const double* dout, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double x = inp[i];
    const double u = kGeluScale * (x + 0.044715 * x * x * x);
    const double th = std::tanh(u);
    const double du = kGeluScale * (1.0 + 3.0 * 0.044715 * x * x);
    dinp[i] += dout[i] * (0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du);
  }
}

void SoftmaxForward(double* probs, const double* logits, int rows, int V, int Vp) {
  for (int r = 0; r < rows; ++r) {
    const double* l = logits + size_t(r) * Vp;
    double* p = probs + size_t(r) * Vp;
    double mx = -1e300;
    for (int i = 0; i < V; ++i) mx = std::max(mx, l[i]);
    double sum = 0;
    for (int i = 0; i < V; ++i) sum += (p[i] = std::exp(l[i] - mx));
    for (int i = 0; i < Vp; ++i) p[i] = i < V ? p[i] / sum : 0.0;
  }
}

void CrossEntropyForward(double* losses, const double* probs, const int* targets, int rows, int Vp) {
  for (int r = 0; r < rows; ++r) losses[r] = -std::log(probs[size_t(r) * Vp + targets[r]]);
}

void CrossEntropySoftmaxBackward(double* dlogits, const double* probs, const int* targets, double dloss, int rows,
                                 int V, int Vp) {
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < Vp; ++i) {
      const double p = probs[size_t(r) * Vp + i];
      dlogits[size_t(r) * Vp + i] = i < V ? (p - (i == targets[r] ? 1.0 : 0.0)) * dloss : 0.0;
    }
}

GptRef::GptRef(const GptConfig& config, const std::vector<float>& params)
    : config_(config),
      layout_(config),
      params_(params.begin(), params.end()),
      grads_(layout_.total, 0.0),
      m_(layout_.total, 0.0),
      v_(layout_.total, 0.0) {}

double GptRef::Forward(const int* inputs, const int* targets, int B, int T) {
  const int C = config_.channels, L = config_.num_layers, NH = config_.num_heads;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
  const size_t BT = size_t(B) * T;
  B_ = B;
  T_ = T;
  inputs_.assign(inputs, inputs + BT);
  targets_.assign(targets, targets + BT);
  Activations& a = acts_;
  auto per_layer = [&](std::vector<Vec>& v, size_t n) { v.assign(L, Vec(n)); };
  a.encoded.assign(BT * C, 0);
  per_layer(a.ln1, BT * C);
  per_layer(a.ln1_mean, BT);
  per_layer(a.ln1_rstd, BT);
  per_layer(a.qkv, BT * 3 * C);
  per_layer(a.att, size_t(B) * NH * T * T);
  per_layer(a.atty, BT * C);
  per_layer(a.attproj, BT * C);
  per_layer(a.residual2, BT * C);
  per_layer(a.ln2, BT * C);
  per_layer(a.ln2_mean, BT);
  per_layer(a.ln2_rstd, BT);
  per_layer(a.fch, BT * 4 * C);
  per_layer(a.fch_gelu, BT * 4 * C);
  per_layer(a.fcproj, BT * C);
  per_layer(a.residual3, BT * C);
  a.lnf.assign(BT * C, 0);
  a.lnf_mean.assign(BT, 0);
  a.lnf_rstd.assign(BT, 0);
  a.logits.assign(BT * Vp, 0);
  a.probs.assign(BT * Vp, 0);
  a.losses.assign(BT, 0);

  EncoderForward(a.encoded.data(), inputs, P(kWte), P(kWpe), B, T, C);
  for (int l = 0; l < L; ++l) {
    const double* residual = l == 0 ? a.encoded.data() : a.residual3[l - 1].data();
    LayerNormForward(a.ln1[l].data(), a.ln1_mean[l].data(), a.ln1_rstd[l].data(), residual, P(kLn1W) + l * C,
                     P(kLn1B) + l * C, BT, C);
    MatmulForward(a.qkv[l].data(), a.ln1[l].data(), P(kQkvW) + size_t(l) * 3 * C * C, P(kQkvB) + l * 3 * C, BT, C,
                  3 * C);
    AttentionForward(a.atty[l].data(), a.att[l].data(), a.qkv[l].data(), B, T, C, NH);
    MatmulForward(a.attproj[l].data(), a.atty[l].data(), P(kAttProjW) + size_t(l) * C * C, P(kAttProjB) + l * C, BT, C,
                  C);
    for (size_t i = 0; i < BT * C; ++i) a.residual2[l][i] = residual[i] + a.attproj[l][i];
    LayerNormForward(a.ln2[l].data(), a.ln2_mean[l].data(), a.ln2_rstd[l].data(), a.residual2[l].data(),
                     P(kLn2W) + l * C, P(kLn2B) + l * C, BT, C);
    MatmulForward(a.fch[l].data(), a.ln2[l].data(), P(kFcW) + size_t(l) * 4 * C * C, P(kFcB) + l * 4 * C, BT, C, 4 * C);
    GeluForward(a.fch_gelu[l].data(), a.fch[l].data(), BT * 4 * C);
    MatmulForward(a.fcproj[l].data(), a.fch_gelu[l].data(), P(kFcProjW) + size_t(l) * 4 * C * C, P(kFcProjB) + l * C,
                  BT, 4 * C, C);
    for (size_t i = 0; i < BT * C; ++i) a.residual3[l][i] = a.residual2[l][i] + a.fcproj[l][i];
  }
  LayerNormForward(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), a.residual3[L - 1].data(), P(kLnfW), P(kLnfB),
                   BT, C);
  MatmulForward(a.logits.data(), a.lnf.data(), P(kWte), nullptr, BT, C, Vp);
  SoftmaxForward(a.probs.data(), a.logits.data(), BT, V, Vp);
  CrossEntropyForward(a.losses.data(), a.probs.data(), targets, BT, Vp);
  double loss = 0;
  for (double l : a.losses) loss += l;
  return loss / double(BT);
}

void GptRef::Backward() {
  const int C = config_.channels, L = config_.num_layers, NH = config_.num_heads;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
  const int B = B_, T = T_;
  const size_t BT = size_t(B) * T;
  Activations& a = acts_;
  std::fill(grads_.begin(), grads_.end(), 0.0);

  Vec dlogits(BT * Vp), dlnf(BT * C, 0.0), dres(BT * C, 0.0);
  CrossEntropySoftmaxBackward(dlogits.data(), a.probs.data(), targets_.data(), 1.0 / double(BT), BT, V, Vp);
  MatmulBackward(dlnf.data(), G(kWte), nullptr, dlogits.data(), a.lnf.data(), P(kWte), BT, C, Vp);
  LayerNormBackward(dres.data(), G(kLnfW), G(kLnfB), dlnf.data(), a.residual3[L - 1].data(), P(kLnfW),
                    a.lnf_mean.data(), a.lnf_rstd.data(), BT, C);
  // dres holds d(residual3[l]); it flows unchanged into d(residual2[l]) and d(residual[l]).
  Vec dtmp4(BT * 4 * C), dtmp4b(BT * 4 * C), dln(BT * C), datty(BT * C), dqkv(BT * 3 * C);
  for (int l = L - 1; l >= 0; --l) {
    const double* residual = l == 0 ? a.encoded.data() : a.residual3[l - 1].data();
    // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2))))
    std::fill(dtmp4.begin(), dtmp4.end(), 0.0);
    MatmulBackward(dtmp4.data(), G(kFcProjW) + size_t(l) * 4 * C * C, G(kFcProjB) + l * C, dres.data(),
                   a.fch_gelu[l].data(), P(kFcProjW) + size_t(l) * 4 * C * C, BT, 4 * C, C);
    std::fill(dtmp4b.begin(), dtmp4b.end(), 0.0);
    GeluBackward(dtmp4b.data(), a.fch[l].data(), dtmp4.data(), BT * 4 * C);
    std::fill(dln.begin(), dln.end(), 0.0);
    MatmulBackward(dln.data(), G(kFcW) + size_t(l) * 4 * C * C, G(kFcB) + l * 4 * C, dtmp4b.data(), a.ln2[l].data(),
                   P(kFcW) + size_t(l) * 4 * C * C, BT, C, 4 * C);
    LayerNormBackward(dres.data(), G(kLn2W) + l * C, G(kLn2B) + l * C, dln.data(), a.residual2[l].data(),
                      P(kLn2W) + l * C, a.ln2_mean[l].data(), a.ln2_rstd[l].data(), BT, C);
    // residual2 = residual + attproj(attention(qkv(ln1(residual))))
    std::fill(datty.begin(), datty.end(), 0.0);
    MatmulBackward(datty.data(), G(kAttProjW) + size_t(l) * C * C, G(kAttProjB) + l * C, dres.data(), a.atty[l].data(),
                   P(kAttProjW) + size_t(l) * C * C, BT, C, C);
    std::fill(dqkv.begin(), dqkv.end(), 0.0);
    AttentionBackward(dqkv.data(), datty.data(), a.qkv[l].data(), a.att[l].data(), B, T, C, NH);
    std::fill(dln.begin(), dln.end(), 0.0);
    MatmulBackward(dln.data(), G(kQkvW) + size_t(l) * 3 * C * C, G(kQkvB) + l * 3 * C, dqkv.data(), a.ln1[l].data(),
                   P(kQkvW) + size_t(l) * 3 * C * C, BT, C, 3 * C);
    LayerNormBackward(dres.data(), G(kLn1W) + l * C, G(kLn1B) + l * C, dln.data(), residual, P(kLn1W) + l * C,
                      a.ln1_mean[l].data(), a.ln1_rstd[l].data(), BT, C);
  }
  EncoderBackward(G(kWte), G(kWpe), dres.data(), inputs_.data(), B, T, C);
}

void GptRef::AdamW(double lr, double beta1, double beta2, double eps, double weight_decay, int t) {
  const double c1 = 1.0 - std::pow(beta1, t), c2 = 1.0 - std::pow(beta2, t);
  for (size_t i = 0; i < params_.size(); ++i) {
    const double g = grads_[i];
    m_[i] = beta1 * m_[i] + (1 - beta1) * g;
    v_[i] = beta2 * v_[i] + (1 - beta2) * g * g;
    const double mhat = m_[i] / c1, vhat = v_[i] / c2;
    params_[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params_[i]);
  }
}

}  // namespace gpuscope::gpt::ref
