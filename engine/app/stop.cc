#include "app/stop.h"

#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "common/log.h"

namespace trigd {

void StopOnSignals(std::atomic<bool>& stop) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread started after
  std::thread([signals, &stop] {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) return;
    stop = true;
    std::this_thread::sleep_for(kStopGrace);
    LogLine("still stopping " + std::to_string(kStopGrace.count()) + " ms after " + strsignal(signal) +
            "; exiting now (what was in flight is rolled back, or re-sent from the outbox)");
    std::_Exit(0);
  }).detach();
}

void ReloadOnHangup(std::function<void()> reload) {
  // SIGTERM and SIGINT are blocked here too, before the thread starts: a thread that left them
  // unblocked would take a SIGTERM meant for StopOnSignals' thread and die of it (exit 143).
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGHUP);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  std::thread([signals, reload = std::move(reload)] {
    for (;;) {
      int signal = 0;
      if (sigwait(&signals, &signal) != 0) return;
      reload();
    }
  }).detach();
}

}  // namespace trigd
