// memhealth-test-openai-server: fake_openai_server.hpp as a process, for the tool's tests
// (tests/cli_models.py). Listens on 127.0.0.1 at a free port, writes the port to PORT_FILE, and
// serves until SIGTERM or SIGINT.
//
// usage: memhealth-test-openai-server DIM PORT_FILE [VERDICTS_TSV]
//   VERDICTS_TSV: lines "statement A <TAB> statement B <TAB> verdict JSON object"
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "fake_openai_server.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: memhealth-test-openai-server DIM PORT_FILE [VERDICTS_TSV]\n";
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server's threads start
  memhealth::test::fake_openai_server srv(static_cast<std::size_t>(std::atoi(argv[1])));
  if (argc > 3) {
    std::ifstream in(argv[3]);
    std::string line;
    while (std::getline(in, line)) {
      const auto t1 = line.find('\t');
      const auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      if (t2 == std::string::npos) continue;
      srv.set_verdict(line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1));
    }
  }
  {
    const std::string tmp = std::string(argv[2]) + ".tmp";
    std::ofstream(tmp) << srv.port() << "\n";
    std::rename(tmp.c_str(), argv[2]);
  }
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
