#pragma once
// SIGINT/SIGTERM for a command that stops at a safe point: the first signal is recorded (and a
// message written to stderr) so the command can finish the step in hand, clean up and say what
// is left; a second one acts as if the handler were not there (the handler installed before it
// runs, then the process dies of the signal). Used by `migrate run` (stops after the batch in
// hand) and the PostgreSQL worker runs (`check|plan --workers`, `worker`: stop after the jobs in
// hand and drop the run's tables).

#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

#include <signal.h>
#include <unistd.h>

namespace memhealth::cli {

/// Thrown by a command that stopped on SIGINT/SIGTERM before finishing; `main` prints the
/// message and exits 128 + signal (130, 143).
struct interrupted : std::runtime_error {
  interrupted(int sig, const std::string& what) : std::runtime_error(what), signal(sig) {}
  int signal;
};

inline std::atomic<int> g_interrupt_signal{0};     // the first signal received (0 = none)
inline const char* g_interrupt_message = nullptr;  // written on the first signal
inline struct sigaction g_interrupt_old_int {};
inline struct sigaction g_interrupt_old_term {};

extern "C" inline void interrupt_on_signal(int sig) {
  if (g_interrupt_signal.exchange(sig) != 0) {
    ::sigaction(sig, sig == SIGINT ? &g_interrupt_old_int : &g_interrupt_old_term, nullptr);
    ::raise(sig);
    return;
  }
  if (const char* m = g_interrupt_message)
    if (::write(2, m, std::strlen(m)) < 0) return;
}

/// Installs interrupt_on_signal for SIGINT and SIGTERM while it lives (not for a signal that is
/// ignored, e.g. under nohup), and puts the handlers before it back. `message` (static storage,
/// one line ending in '\n') is written on the first signal.
class interrupt_guard {
 public:
  explicit interrupt_guard(const char* message) {
    g_interrupt_signal.store(0);
    g_interrupt_message = message;
    struct sigaction sa {};
    sa.sa_handler = &interrupt_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    for (const int sig : {SIGINT, SIGTERM}) {
      auto& old = sig == SIGINT ? g_interrupt_old_int : g_interrupt_old_term;
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      ::sigaction(sig, &sa, nullptr);
      (sig == SIGINT ? int_ : term_) = true;
    }
  }
  ~interrupt_guard() {
    if (int_) ::sigaction(SIGINT, &g_interrupt_old_int, nullptr);
    if (term_) ::sigaction(SIGTERM, &g_interrupt_old_term, nullptr);
  }
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

  /// Whether a signal came (callable from any thread).
  [[nodiscard]] static bool requested() noexcept { return g_interrupt_signal.load() != 0; }
  /// The first signal received, 0 when none.
  [[nodiscard]] static int signal() noexcept { return g_interrupt_signal.load(); }

 private:
  bool int_ = false, term_ = false;
};

}  // namespace memhealth::cli
