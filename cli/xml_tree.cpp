#include "xml_tree.h"

#include <cctype>
#include <cstdlib>

namespace cert {

const std::string* XmlElement::attribute(const std::string& key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return &v;
  return nullptr;
}

std::string XmlElement::attribute_or(const std::string& key, const std::string& fallback) const {
  const std::string* v = attribute(key);
  return v ? *v : fallback;
}

std::vector<const XmlElement*> XmlElement::descendants(const std::string& element_name) const {
  std::vector<const XmlElement*> out;
  std::vector<const XmlElement*> stack = {this};
  // Pre-order walk, children in document order.
  while (!stack.empty()) {
    const XmlElement* e = stack.back();
    stack.pop_back();
    if (e != this && e->name == element_name) out.push_back(e);
    for (auto it = e->children.rbegin(); it != e->children.rend(); ++it) stack.push_back(it->get());
  }
  return out;
}

std::vector<const XmlElement*> XmlElement::children_named(const std::string& element_name) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children)
    if (c->name == element_name) out.push_back(c.get());
  return out;
}

namespace {

void append_utf8(std::string& s, unsigned long cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x110000) {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string decode_entities(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const std::size_t semi = raw.find(';', i);
    if (semi == std::string::npos || semi - i > 10) {
      out += raw[i];
      continue;
    }
    const std::string ent = raw.substr(i + 1, semi - i - 1);
    if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "amp") out += '&';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      const bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
      append_utf8(out, std::strtoul(ent.c_str() + (hex ? 2 : 1), nullptr, hex ? 16 : 10));
    } else {
      out += raw.substr(i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' || c == '.';
}

}  // namespace

std::unique_ptr<XmlElement> parse_xml(const std::string& s, bool& complete) {
  auto root = std::make_unique<XmlElement>();
  std::vector<XmlElement*> open = {root.get()};
  std::size_t i = 0;
  const std::size_t n = s.size();
  complete = false;
  while (i < n) {
    if (s[i] != '<') {
      const std::size_t next = s.find('<', i);
      const std::size_t end = next == std::string::npos ? n : next;
      open.back()->text += decode_entities(s.substr(i, end - i));
      i = end;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      const std::size_t end = s.find("-->", i + 4);
      if (end == std::string::npos) return root;
      i = end + 3;
    } else if (s.compare(i, 9, "<![CDATA[") == 0) {
      const std::size_t end = s.find("]]>", i + 9);
      if (end == std::string::npos) return root;
      open.back()->text += s.substr(i + 9, end - i - 9);
      i = end + 3;
    } else if (s.compare(i, 2, "<?") == 0 || s.compare(i, 2, "<!") == 0) {
      const std::size_t end = s.find('>', i);
      if (end == std::string::npos) return root;
      i = end + 1;
    } else if (s.compare(i, 2, "</") == 0) {
      const std::size_t end = s.find('>', i);
      if (end == std::string::npos) return root;
      const std::string name = s.substr(i + 2, end - i - 2);
      // Close up to the matching element (tolerates a missing end tag inside).
      for (std::size_t k = open.size(); k-- > 1;) {
        if (open[k]->name == name) {
          open.resize(k);
          break;
        }
      }
      i = end + 1;
    } else {
      std::size_t j = i + 1;
      while (j < n && is_name_char(s[j])) ++j;
      auto element = std::make_unique<XmlElement>();
      element->name = s.substr(i + 1, j - i - 1);
      bool self_closing = false;
      bool closed = false;
      while (j < n) {
        while (j < n && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j >= n) break;
        if (s[j] == '>') {
          closed = true;
          ++j;
          break;
        }
        if (s[j] == '/' && j + 1 < n && s[j + 1] == '>') {
          closed = self_closing = true;
          j += 2;
          break;
        }
        std::size_t k = j;
        while (k < n && is_name_char(s[k])) ++k;
        if (k == j) {  // not a name: skip the character rather than loop
          ++j;
          continue;
        }
        std::string key = s.substr(j, k - j);
        j = k;
        while (j < n && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        std::string value;
        if (j < n && s[j] == '=') {
          ++j;
          while (j < n && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
          if (j < n && (s[j] == '"' || s[j] == '\'')) {
            const char q = s[j];
            const std::size_t end = s.find(q, j + 1);
            if (end == std::string::npos) return root;
            value = decode_entities(s.substr(j + 1, end - j - 1));
            j = end + 1;
          }
        }
        element->attributes.emplace_back(std::move(key), std::move(value));
      }
      if (!closed) return root;
      XmlElement* raw = element.get();
      open.back()->children.push_back(std::move(element));
      if (!self_closing) open.push_back(raw);
      i = j;
    }
  }
  complete = open.size() == 1;
  return root;
}

}  // namespace cert
