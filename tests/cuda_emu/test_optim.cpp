/* ct__cuda_optimizer_step (optim.cu) under the emulator, against double
 * references of backend/cpu/optim.c (torch.optim's single-tensor updates):
 * SGD (momentum 0 = no buffer, dampening, nesterov, weight decay, the first
 * step initializing the buffer: its old contents, nan here, unread), Adam
 * and AdamW (L2 vs decoupled weight decay, bias corrections at steps 1, 2,
 * 3, ..., 1000, beta1 = 0, eps = 0, amsgrad with a nan in the running max);
 * several consecutive steps on the kernel's own state; many parameters in
 * one call, f32 and f64 interleaved (one launch per dtype, the pointers in
 * the kernel's argument), numel 0, 1, odd sizes and several 8192-element
 * chunks, more chunks than blocks (grid-stride, 1 to 4 SMs), more tensors
 * (30) and chunks (320) than one launch holds (multi_tensor.cuh: the next
 * launch goes on, mid-tensor too); nan/inf gradients. RMSprop (momentum,
 * centered, weight decay) and Adagrad (lr decay at steps 1..1000) through the
 * same paths, bit for bit against core/optim_math.h's formulas evaluated
 * here (the CPU's: test_optim_rmsprop_adagrad checks those against
 * torch.optim). */
#include <algorithm>
#include <memory>

#include "emu_test.h"

using namespace et;

constexpr ct_optim_kind SGD = CT_OPTIM_SGD, ADAM = CT_OPTIM_ADAM, ADAMW = CT_OPTIM_ADAMW,
                        RMSPROP = CT_OPTIM_RMSPROP, ADAGRAD = CT_OPTIM_ADAGRAD;
constexpr int NKINDS = 5;
static const char *const KIND_NAMES[NKINDS] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};

/* RMSprop, Adagrad: the shared formula in T on one element (p and the
 * state values in, the expected ones out). */
template <class T, class C>
static void shared_update(const C &c, ct_optim_kind kind, double g, double *p, double s[3],
                          const bool has[3]) {
  T pt = (T)*p, st[3] = {(T)s[0], (T)s[1], (T)s[2]};
  if (kind == RMSPROP)
    pt = ct_rmsprop_update(&c, pt, (T)g, &st[0], has[1] ? &st[1] : nullptr,
                           has[2] ? &st[2] : nullptr);
  else
    pt = ct_adagrad_update(&c, pt, (T)g, &st[0]);
  *p = (double)pt;
  for (int k = 0; k < 3; k++) s[k] = (double)st[k];
}

struct Param {
  int dt;
  Tensor p, g, s[3];
  bool has[3] = {false, false, false};
};

static long nkind[NKINDS], nmixed, nsteps;

/* One call: references from the values before it (read back), then the
 * kernel; returns false on a failure (the next steps are skipped). */
static bool step(const ct_optim_params &o, std::vector<std::unique_ptr<Param>> &ps,
                 const char *tag) {
  int n = (int)ps.size();
  /* the tensors of the call; a state the kind lacks is NULL */
  std::vector<CtHold> hold((size_t)(5 * n));
  std::vector<ct_tensor *> P((size_t)n), G((size_t)n), S[3];
  for (auto &s : S) s.assign((size_t)n, nullptr);
  struct Want {
    std::vector<double> p0, g, p, s[3], err_p, err_s[3];
  };
  std::vector<Want> want((size_t)n);
  double b1 = o.beta1, b2 = o.beta2;
  double bc1 = 1 - pow(b1, (double)o.step), bc2 = 1 - pow(b2, (double)o.step);
  for (int i = 0; i < n; i++) {
    Param &q = *ps[(size_t)i];
    P[(size_t)i] = ct_into(hold[(size_t)(5 * i)], &q.p.d);
    G[(size_t)i] = ct_into(hold[(size_t)(5 * i + 1)], &q.g.d);
    for (int k = 0; k < 3; k++)
      if (q.has[k]) S[k][(size_t)i] = ct_into(hold[(size_t)(5 * i + 2 + k)], &q.s[k].d);
    double ce = eps_of(q.dt);
    Want &w = want[(size_t)i];
    int64_t m = q.p.numel();
    w.p0.resize((size_t)m), w.g.resize((size_t)m), w.p.resize((size_t)m), w.err_p.resize((size_t)m);
    for (int k = 0; k < 3; k++) w.s[k].resize((size_t)m), w.err_s[k].resize((size_t)m);
    for (int64_t e = 0; e < m; e++) {
      double p = q.p.get_d(e), g = q.g.get_d(e);
      w.p0[(size_t)e] = p, w.g[(size_t)e] = g;
      if (o.kind == RMSPROP || o.kind == ADAGRAD) {
        double pw = p, sw[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++)
          if (q.has[k]) sw[k] = q.s[k].get_d(e);
        if (q.dt == CT_F32)
          shared_update<float>(ct_optim_consts_of_f32(&o), o.kind, g, &pw, sw, q.has);
        else
          shared_update<double>(ct_optim_consts_of_f64(&o), o.kind, g, &pw, sw, q.has);
        w.p[(size_t)e] = pw, w.err_p[(size_t)e] = 0;
        for (int k = 0; k < 3; k++) w.s[k][(size_t)e] = sw[k], w.err_s[k][(size_t)e] = 0;
      } else if (o.kind == SGD) {
        double d = g, md = fabs(g);
        if (o.weight_decay != 0) d = g + o.weight_decay * p, md += fabs(o.weight_decay * p);
        if (q.has[0]) {
          double buf = o.first_step ? d : q.s[0].get_d(e) * o.momentum + (1 - o.dampening) * d;
          double mb =
              o.first_step ? md : fabs(q.s[0].get_d(e) * o.momentum) + fabs(1 - o.dampening) * md;
          w.s[0][(size_t)e] = buf, w.err_s[0][(size_t)e] = 6 * ce * mb;
          d = o.nesterov ? d + o.momentum * buf : buf;
          md = o.nesterov ? md + fabs(o.momentum) * mb : mb;
        }
        w.p[(size_t)e] = p - o.lr * d;
        w.err_p[(size_t)e] = 8 * ce * (fabs(p) + fabs(o.lr) * md);
      } else {
        double pi = p, gi = g, mg = fabs(g);
        if (o.kind == ADAMW)
          pi = p * (1 - o.lr * o.weight_decay);
        else if (o.weight_decay != 0)
          gi = g + o.weight_decay * p, mg += fabs(o.weight_decay * p);
        double m0 = q.s[0].get_d(e), v0 = q.s[1].get_d(e);
        double mi = m0 * b1 + (1 - b1) * gi, vi = v0 * b2 + (1 - b2) * gi * gi;
        double mm = fabs(m0 * b1) + fabs(1 - b1) * mg; /* the terms of mi: its error's scale */
        w.s[0][(size_t)e] = mi, w.err_s[0][(size_t)e] = 6 * ce * mm;
        /* gi's rounding (L2 decay: cancellation) enters squared */
        double ev = 8 * ce * (fabs(v0 * b2) + fabs(1 - b2) * mg * mg);
        w.s[1][(size_t)e] = vi, w.err_s[1][(size_t)e] = ev;
        double s = vi;
        if (q.has[2]) {
          double mx = q.s[2].get_d(e);
          s = (mx > vi || mx != mx) ? mx : vi;
          w.s[2][(size_t)e] = s, w.err_s[2][(size_t)e] = ev;
        }
        double denom = sqrt(s) / sqrt(bc2) + o.eps;
        double upd = -(o.lr / bc1) * mi / denom;
        w.p[(size_t)e] = pi + upd;
        /* denom's relative error: half s's, plus the roundings */
        double rs = s > 0 ? ev / s : 0;
        w.err_p[(size_t)e] =
            16 * ce * (fabs(pi) + fabs(o.lr / bc1) * mm / denom + fabs(upd)) + fabs(upd) * rs;
      }
    }
    q.p.snapshot(), q.g.snapshot();
    for (int k = 0; k < 3; k++)
      if (q.has[k]) q.s[k].snapshot();
  }
  emu::clear_message();
  ct_status st =
      ct__cuda_optimizer_step(&o, P.data(), G.data(), S[0].data(), S[1].data(), S[2].data(), n);
  ncases++, nsteps++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  static const char *const sname[NKINDS][3] = {{"momentum_buffer", "", ""},
                                               {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                               {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                                               {"square_avg", "momentum_buffer", "grad_avg"},
                                               {"sum", "", ""}};
  for (int i = 0; i < n && nfail == fails; i++) {
    Param &q = *ps[(size_t)i];
    Want &w = want[(size_t)i];
    for (int64_t e = 0; e < q.p.numel() && nfail == fails; e++) {
      auto ok = [](double got, double want, double err) {
        if (want != want) return got != got;
        if (std::isinf(want) || std::isinf(got)) return got == want;
        return fabs(got - want) <= err + 1e-300;
      };
      if (!ok(q.p.get_d(e), w.p[(size_t)e], w.err_p[(size_t)e]))
        failf("%s: param %d (%s) [%ld] = %.17g, want %.17g (was %.17g, grad %.17g)", tag, i,
              dname(q.dt), (long)e, q.p.get_d(e), w.p[(size_t)e], w.p0[(size_t)e], w.g[(size_t)e]);
      for (int k = 0; k < 3; k++)
        if (q.has[k] && !ok(q.s[k].get_d(e), w.s[k][(size_t)e], w.err_s[k][(size_t)e]))
          failf("%s: param %d (%s) %s[%ld] = %.17g, want %.17g", tag, i, dname(q.dt),
                sname[o.kind][k], (long)e, q.s[k].get_d(e), w.s[k][(size_t)e]);
    }
  }
  for (int i = 0; i < n; i++) {
    Param &q = *ps[(size_t)i];
    std::string c;
    if ((c = q.p.changed(false)) != "") failf("%s: param %d: %s", tag, i, c.c_str());
    if ((c = q.g.changed(true)) != "") failf("%s: grad %d: %s", tag, i, c.c_str());
    for (int k = 0; k < 3; k++)
      if (q.has[k] && (c = q.s[k].changed(false)) != "")
        failf("%s: state %d of param %d: %s", tag, k, i, c.c_str());
  }
  if (nfail != fails) {
    printf(
        "   %s lr=%g momentum=%g dampening=%g wd=%g nesterov=%d first=%d betas=(%g, %g) eps=%g "
        "amsgrad=%d step=%ld alpha=%g centered=%d lr_decay=%g sms=%d; params:",
        KIND_NAMES[o.kind], o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.first_step,
        o.beta1, o.beta2, o.eps, o.amsgrad, (long)o.step, o.alpha, o.centered, o.lr_decay,
        emu::sm_count);
    for (auto &q : ps) printf(" %s[%ld]", dname(q->dt), (long)q->p.numel());
    printf("\n");
  }
  return nfail == fails;
}

static void fill_const(Tensor &t, double v) {
  for (int64_t e = 0; e < t.numel(); e++) store_d(t.at(e), t.dt(), v);
}
static void fill(Tensor &t, double lo, double hi, bool specials) {
  for (int64_t e = 0; e < t.numel(); e++) {
    double v = coin(12) ? 0.0 : unif(lo, hi);
    if (specials && coin(200)) v = coin(2) ? NAN : coin(2) ? INFINITY : -INFINITY;
    store_d(t.at(e), t.dt(), v);
  }
}

/* n parameters of the given sizes and dtypes; `steps` calls of one optimizer. */
static void run_case(ct_optim_params o, const std::vector<int64_t> &sizes,
                     const std::vector<int> &dts, int steps, bool specials, const char *tag) {
  std::vector<std::unique_ptr<Param>> ps;
  bool fresh = o.kind == SGD ? o.first_step : o.step == 1;
  for (size_t i = 0; i < sizes.size(); i++) {
    ps.emplace_back(new Param);
    Param &q = *ps.back();
    q.dt = dts[i];
    std::vector<int64_t> shape = {sizes[i]};
    if (sizes[i] % 6 == 0 && coin(2)) shape = {6, sizes[i] / 6};
    Layout l;
    l.off = rnd(0, 3);
    make(q.p, q.dt, shape, l);
    l.off = rnd(0, 3);
    make(q.g, q.dt, shape, l);
    fill(q.p, -2, 2, false);
    if (o.kind == SGD)
      q.has[0] = o.momentum != 0;
    else if (o.kind == RMSPROP)
      q.has[0] = true, q.has[1] = o.momentum > 0, q.has[2] = o.centered;
    else if (o.kind == ADAGRAD)
      q.has[0] = true;
    else
      q.has[0] = q.has[1] = true, q.has[2] = o.amsgrad;
    for (int k = 0; k < 3; k++) {
      if (!q.has[k]) continue;
      l.off = rnd(0, 3);
      make(q.s[k], q.dt, shape, l);
      if (o.kind == SGD) { /* a new buffer is not read: nan shows it was */
        if (fresh)
          fill_const(q.s[k], NAN);
        else
          fill(q.s[k], -1, 1, false);
      } else if (fresh) {
        fill_const(q.s[k], 0);
      } else if (o.kind == RMSPROP || o.kind == ADAGRAD) { /* square averages >= 0 */
        fill(q.s[k], k == 0 ? 0 : -0.5, 0.5, false);
      } else {
        fill(q.s[k], k == 0 ? -0.5 : 0, k == 0 ? 0.5 : 0.25, false);
        if (k == 2 && coin(3) && q.s[k].numel() > 0) store_d(q.s[k].at(0), q.dt, NAN);
      }
    }
  }
  if (o.kind == ADAM || o.kind == ADAMW) /* amsgrad: the max must hold v's (above) */
    for (auto &q : ps)
      if (q->has[2])
        for (int64_t e = 0; e < q->p.numel(); e++)
          if (!(q->s[2].get_d(e) != q->s[2].get_d(e)) && q->s[2].get_d(e) < q->s[1].get_d(e) &&
              coin(2))
            store_d(q->s[2].at(e), q->dt, q->s[1].get_d(e));
  for (int t = 0; t < steps; t++) {
    for (auto &q : ps) fill(q->g, -1.5, 1.5, specials);
    if (!step(o, ps, tag)) break;
    o.first_step = false;
    o.step++;
  }
}

static ct_optim_params random_optim(int kind) {
  ct_optim_params o{};
  o.kind = (ct_optim_kind)kind;
  o.lr = coin(4) ? 0.1 : coin(3) ? 1e-3 : unif(0, 2);
  o.weight_decay = coin(2) ? 0.0 : coin(2) ? 1e-2 : unif(0, 1);
  if (kind == RMSPROP) {
    o.alpha = coin(2) ? 0.99 : unif(0, 1);
    o.eps = coin(3) ? 1e-8 : coin(2) ? 0.0 : unif(0, 1);
    o.momentum = coin(2) ? 0.0 : coin(2) ? 0.9 : unif(0, 1);
    o.centered = coin(2);
    o.step = rnd(1, 20);
  } else if (kind == ADAGRAD) {
    o.lr_decay = coin(2) ? 0.0 : unif(0, 1);
    o.eps = coin(3) ? 1e-10 : coin(2) ? 0.0 : unif(0, 1);
    o.step = coin(3) ? 1 : coin(2) ? rnd(2, 20) : 1000;
  } else if (kind == SGD) {
    o.momentum = coin(4) ? 0.0 : coin(2) ? 0.9 : unif(0, 1);
    o.dampening = coin(2) ? 0.0 : coin(2) ? 0.5 : unif(0, 1);
    o.nesterov = o.momentum != 0 && o.dampening == 0 && coin(2);
    o.first_step = coin(2);
  } else {
    o.beta1 = coin(4) ? 0.0 : coin(2) ? 0.9 : unif(0, 0.99);
    o.beta2 = coin(2) ? 0.999 : unif(0.3, 0.9999);
    o.eps = coin(3) ? 1e-8 : coin(2) ? 0.0 : unif(0, 1);
    o.amsgrad = coin(2);
    o.step = coin(3) ? 1 : coin(2) ? rnd(2, 20) : 1000;
  }
  return o;
}

int run_optim(void) {
  Suite su("optim.cu: SGD, Adam, AdamW, RMSprop, Adagrad multi-tensor updates");
  char tag[128];
  long iters = full ? 1000 : 200;
  for (long it = 0; it < iters; it++) {
    int kind = (int)(it % NKINDS);
    ct_optim_params o = random_optim(kind);
    int n = coin(4) ? 1 : (int)rnd(2, 9);
    std::vector<int64_t> sizes;
    std::vector<int> dts;
    int dmode = (int)rnd(0, 2); /* all f32, all f64, mixed */
    for (int i = 0; i < n; i++) {
      int64_t s = coin(10) ? 0 : coin(6) ? rnd(8190, 20000) : coin(2) ? rnd(1, 40) : rnd(41, 3000);
      sizes.push_back(s);
      dts.push_back(dmode == 0 ? CT_F32 : dmode == 1 ? CT_F64 : coin(2) ? CT_F32 : CT_F64);
    }
    bool mixed = false;
    for (int d : dts) mixed = mixed || d != dts[0];
    emu::sm_count = (int)rnd(1, 4);
    snprintf(tag, sizeof tag, "%s #%ld", KIND_NAMES[kind], it);
    nkind[kind]++;
    nmixed += mixed;
    /* eps = 0 with zero gradients divides 0 by 0 (nan, as torch): keep it, the reference agrees */
    run_case(o, sizes, dts, (int)rnd(1, 3), coin(8), tag);
  }
  /* more chunks than blocks: 1 SM (8 blocks), f32 and f64 interleaved */
  for (int kind = 0; kind < NKINDS; kind++) {
    ct_optim_params o = random_optim(kind);
    emu::sm_count = 1;
    snprintf(tag, sizeof tag, "%s grid-stride", KIND_NAMES[kind]);
    run_case(o, {20000, 8193, 17, 24576, 0, 9000, 8192},
             {CT_F64, CT_F32, CT_F64, CT_F32, CT_F32, CT_F64, CT_F32}, 2, false, tag);
  }
  /* more than one launch holds (320 chunks, 30 tensors): 14 f32 tensors of 23
   * chunks fill the first launch in the middle of the 14th, which goes on in
   * the second, with 29 of 31 one-chunk tensors (30 tensors); the last two
   * make a third launch, the f64 tensor a fourth */
  for (int kind = 0; kind < NKINDS; kind++) {
    ct_optim_params o = random_optim(kind);
    emu::sm_count = 4;
    std::vector<int64_t> sizes(14, 23 * 8192 - 5);
    sizes.resize(45, 8000);
    sizes.push_back(0);
    sizes.push_back(100);
    std::vector<int> dts(47, CT_F32);
    dts[46] = CT_F64;
    snprintf(tag, sizeof tag, "%s several launches", KIND_NAMES[kind]);
    long l0 = emu::total_launches();
    run_case(o, sizes, dts, 1, false, tag);
    if (emu::total_launches() - l0 != 4)
      failf("%s: %ld launches, expected 4", tag, emu::total_launches() - l0);
  }
  /* nothing to update (every numel 0): no launch */
  {
    long l0 = emu::total_launches();
    ct_optim_params o = random_optim(ADAM);
    run_case(o, {0, 0}, {CT_F32, CT_F64}, 1, false, "adam numel 0");
    if (emu::total_launches() != l0) failf("optimizer_step of empty parameters launched a kernel");
  }
  printf(
      "  cases: sgd %ld, adam %ld, adamw %ld, rmsprop %ld, adagrad %ld optimizers (%ld with f32 "
      "and f64 mixed), %ld steps\n",
      nkind[SGD], nkind[ADAM], nkind[ADAMW], nkind[RMSPROP], nkind[ADAGRAD], nmixed, nsteps);
  return su.end("optim.cu");
}
