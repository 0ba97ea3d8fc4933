// A streaming JSON writer for certificates and kill matrices: correct escaping, commas and
// nesting handled here so the writers of reports only say what goes where.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace cert {

class JsonWriter {
 public:
  JsonWriter& begin_object(const char* key = nullptr) { return open(key, '{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array(const char* key = nullptr) { return open(key, '['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& value(const char* key, const std::string& v) {
    prefix(key);
    out_ += quote(v);
    return *this;
  }
  JsonWriter& value(const char* key, const char* v) { return value(key, std::string(v)); }
  JsonWriter& value(const char* key, bool v) {
    prefix(key);
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& value(const char* key, std::int64_t v) {
    prefix(key);
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(const char* key, int v) { return value(key, static_cast<std::int64_t>(v)); }
  JsonWriter& value(const char* key, double v) {
    prefix(key);
    if (!std::isfinite(v)) {
      out_ += "null";  // JSON has no NaN/Inf
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      out_ += buf;
    }
    return *this;
  }
  JsonWriter& null(const char* key) {
    prefix(key);
    out_ += "null";
    return *this;
  }

  const std::string& str() const { return out_; }

  static std::string quote(const std::string& s) {
    std::string q = "\"";
    for (unsigned char c : s) {
      switch (c) {
        case '"': q += "\\\""; break;
        case '\\': q += "\\\\"; break;
        case '\n': q += "\\n"; break;
        case '\r': q += "\\r"; break;
        case '\t': q += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            q += buf;
          } else {
            q += static_cast<char>(c);
          }
      }
    }
    return q + "\"";
  }

 private:
  JsonWriter& open(const char* key, char bracket) {
    prefix(key);
    out_ += bracket;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char bracket) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += bracket;
    if (first_.empty()) out_ += '\n';
    return *this;
  }
  void newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void prefix(const char* key) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      newline();
    }
    if (key) {
      out_ += quote(key);
      out_ += ": ";
    }
  }

  std::string out_;
  std::vector<bool> first_;
};

}  // namespace cert
