#include "platform/windows_host.hpp"

#ifdef _WIN32

#include <windows.h>

namespace sbx::platform {

std::optional<std::wstring> to_wide(const std::string& text) {
  if (text.empty()) return std::wstring();
  const int size = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text.data(),
                                       static_cast<int>(text.size()), nullptr, 0);
  if (size <= 0) return std::nullopt;
  std::wstring out(static_cast<std::size_t>(size), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text.data(), static_cast<int>(text.size()),
                      out.data(), size);
  return out;
}

std::optional<std::string> to_utf8(const std::wstring& text) {
  if (text.empty()) return std::string();
  const int size = WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, text.data(),
                                       static_cast<int>(text.size()), nullptr, 0, nullptr, nullptr);
  if (size <= 0) return std::nullopt;
  std::string out(static_cast<std::size_t>(size), '\0');
  WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, text.data(), static_cast<int>(text.size()),
                      out.data(), size, nullptr, nullptr);
  return out;
}

std::optional<std::string> current_directory() {
  const DWORD size = GetCurrentDirectoryW(0, nullptr);
  if (size == 0) return std::nullopt;
  std::wstring buffer(size, L'\0');
  const DWORD written = GetCurrentDirectoryW(size, buffer.data());
  if (written == 0 || written >= size) return std::nullopt;
  buffer.resize(written);
  return to_utf8(buffer);
}

std::vector<std::string> environment() {
  std::vector<std::string> out;
  wchar_t* block = GetEnvironmentStringsW();
  if (block == nullptr) return out;
  for (const wchar_t* entry = block; *entry != L'\0';) {
    const std::wstring text(entry);
    entry += text.size() + 1;
    if (text.empty() || text.front() == L'=') continue;  // "=C:=C:\dir": per-drive cwds
    if (std::optional<std::string> utf8 = to_utf8(text)) out.push_back(std::move(*utf8));
  }
  FreeEnvironmentStringsW(block);
  return out;
}

}  // namespace sbx::platform

#endif  // _WIN32
