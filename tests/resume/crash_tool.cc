// crash_tool OUTPUT_DIR DIGEST_FILE: runs the resume harness's training (saving every step)
// in OUTPUT_DIR, resuming from the newest complete checkpoint when there is one, and writes
// the run's digest (resume_harness.h) to DIGEST_FILE atomically. crash_test.sh SIGKILLs it
// at random moments and checks that the finished run's digest equals an uninterrupted one's.
#include <filesystem>
#include <iostream>

#include "base/file_util.h"
#include "logging/process_logging.h"
#include "tests/resume/resume_harness.h"

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  if (argc != 3) {
    std::cerr << "usage: crash_tool OUTPUT_DIR DIGEST_FILE\n";
    return 2;
  }
  const std::string dir = argv[1];
  bool has_checkpoint = false;
  if (std::filesystem::exists(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().filename().string().rfind("checkpoint-", 0) == 0) has_checkpoint = true;
    }
  }
  auto trainer = loom::tests::MakeResumeTrainer(dir, {}, "steps", 1);
  if (!trainer.ok()) {
    std::cerr << "crash_tool: " << trainer.status() << "\n";
    return 1;
  }
  auto out = has_checkpoint ? (*trainer)->Train(loom::trainer::ResumeFrom::Latest())
                            : (*trainer)->Train();
  if (!out.ok()) {
    std::cerr << "crash_tool: " << out.status() << "\n";
    return 1;
  }
  absl::Status s = loom::base::WriteFileAtomically(argv[2], loom::tests::RunDigest(**trainer));
  if (!s.ok()) {
    std::cerr << "crash_tool: " << s << "\n";
    return 1;
  }
  return 0;
}
