/* The registry of the emulated GPU's call counters (emu_calls.h). */
#include "emu_calls.h"

#include <string.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex registry_mu;
emu_count::counter *head = nullptr;
}  // namespace

emu_count::counter::counter(const char *fn) : name(fn) {
  std::lock_guard<std::mutex> g(registry_mu);
  next = head;
  head = this;
}

extern "C" long emu_calls(const char *name) {
  std::lock_guard<std::mutex> g(registry_mu);
  long n = 0;
  for (emu_count::counter *c = head; c; c = c->next)
    if (strcmp(c->name, name) == 0) n += c->n.load();
  return n;
}

extern "C" long emu_calls_prefixed(const char *prefix) {
  std::lock_guard<std::mutex> g(registry_mu);
  long n = 0;
  size_t len = strlen(prefix);
  for (emu_count::counter *c = head; c; c = c->next)
    if (strncmp(c->name, prefix, len) == 0) n += c->n.load();
  return n;
}

extern "C" void emu_calls_kernel(const char *name) {
  static std::mutex mu;
  static std::map<std::string, emu_count::counter *> by_name;
  std::string key(name);
  key = "kernel launch: " + key.substr(0, key.find('<'));
  emu_count::counter *c;
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = by_name.find(key);
    if (it == by_name.end()) /* kept for the process: a counter per kernel name */
      it = by_name.emplace(key, new emu_count::counter(strdup(key.c_str()))).first;
    c = it->second;
  }
  c->hit();
}

extern "C" void emu_calls_reset(void) {
  std::lock_guard<std::mutex> g(registry_mu);
  for (emu_count::counter *c = head; c; c = c->next) c->n.store(0);
}

extern "C" void emu_calls_print(FILE *f, int per) {
  std::vector<std::pair<std::string, long>> rows;
  {
    std::lock_guard<std::mutex> g(registry_mu);
    for (emu_count::counter *c = head; c; c = c->next) {
      long n = c->n.load();
      if (n == 0) continue;
      auto it =
          std::find_if(rows.begin(), rows.end(), [c](const auto &r) { return r.first == c->name; });
      if (it == rows.end())
        rows.emplace_back(c->name, n);
      else
        it->second += n;
    }
  }
  std::sort(rows.begin(), rows.end());
  for (const auto &r : rows)
    fprintf(f, "  %s: %g\n", r.first.c_str(), (double)r.second / (per > 0 ? per : 1));
}
