// The zip format's fixed pieces (PKWARE APPNOTE 6.3) shared by loom's torch.save archive writer
// (torch_save_writer.h) and reader (zip_reader.h): record signatures, extra-field ids and
// little-endian integer coding. Header-only; nothing here reads a file.
//
// Example:
//   std::string h;
//   zip_format::Put32(h, zip_format::kLocalHeader);
//   uint32_t sig = zip_format::Get32(h.data());  // == kLocalHeader
#ifndef LOOM_CHECKPOINT_ZIP_FORMAT_H_
#define LOOM_CHECKPOINT_ZIP_FORMAT_H_

#include <cstdint>
#include <string>

namespace loom::checkpoint::zip_format {

inline constexpr uint32_t kLocalHeader = 0x04034b50;
inline constexpr uint32_t kCentralHeader = 0x02014b50;
inline constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
inline constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
inline constexpr uint32_t kZip64Locator = 0x07064b50;
inline constexpr uint16_t kZip64ExtraId = 0x0001;
inline constexpr uint16_t kPaddingExtraId = 0x4246;  // "FB": torch.save's alignment padding

// Fixed sizes of the records (before their variable-length name, extra and comment fields).
inline constexpr uint64_t kLocalHeaderSize = 30;
inline constexpr uint64_t kCentralHeaderSize = 46;
inline constexpr uint64_t kEndOfCentralDirectorySize = 22;
inline constexpr uint64_t kZip64EndOfCentralDirectorySize = 56;
inline constexpr uint64_t kZip64LocatorSize = 20;

inline void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
inline void Put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void Put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline uint64_t GetLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline uint16_t Get16(const char* p) { return static_cast<uint16_t>(GetLittleEndian(p, 2)); }
inline uint32_t Get32(const char* p) { return static_cast<uint32_t>(GetLittleEndian(p, 4)); }
inline uint64_t Get64(const char* p) { return GetLittleEndian(p, 8); }

}  // namespace loom::checkpoint::zip_format

#endif  // LOOM_CHECKPOINT_ZIP_FORMAT_H_
