// memhealth-test-openai-server: fake_openai_server.hpp as a process, for the tool's tests
// (tests/cli_models.py). Listens on 127.0.0.1 at a free port, writes the port to PORT_FILE, and
// serves until SIGTERM or SIGINT. A fixture, not a test: tests/cli_models.py asserts on what the
// tool does against it (and on the request counts it answers at GET /stats). Bad arguments or an
// unreadable verdict file are exit 2, so a broken fixture fails the test instead of serving less.
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
  const int dim = std::atoi(argv[1]);
  if (dim <= 0 || dim > 65536) {
    std::cerr << "memhealth-test-openai-server: DIM must be 1..65536, got '" << argv[1] << "'\n";
    return 2;
  }
  memhealth::test::fake_openai_server srv(static_cast<std::size_t>(dim));
  if (argc > 3) {
    std::ifstream in(argv[3]);
    if (!in) {
      std::cerr << "memhealth-test-openai-server: cannot read " << argv[3] << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      const auto t1 = line.find('\t');
      const auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      if (t2 == std::string::npos) {
        std::cerr << "memhealth-test-openai-server: " << argv[3] << ": a line without two tabs\n";
        return 2;
      }
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
