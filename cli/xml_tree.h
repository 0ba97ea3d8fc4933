// A minimal XML reader for the reports of Catch2's XML reporter: elements, attributes and text,
// entities decoded. Not a general XML parser (no DTDs, no namespaces); enough for a well-formed
// report, and it never crashes on a truncated one (a killed child leaves half a document).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace cert {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string text;  // concatenated character data directly inside this element
  std::vector<std::unique_ptr<XmlElement>> children;

  const std::string* attribute(const std::string& key) const;
  std::string attribute_or(const std::string& key, const std::string& fallback) const;
  // Depth-first list of every descendant (not this one) named `element_name`.
  std::vector<const XmlElement*> descendants(const std::string& element_name) const;
  std::vector<const XmlElement*> children_named(const std::string& element_name) const;
};

// Parse `text`; the returned root is a synthetic element named "" holding the top-level
// elements. `complete` is false when the document ended before every element was closed.
std::unique_ptr<XmlElement> parse_xml(const std::string& text, bool& complete);

}  // namespace cert
