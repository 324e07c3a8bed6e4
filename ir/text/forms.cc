// The form table (see forms.h): the families' entries, by name.
#include "ir/text/forms.h"

#include <initializer_list>
#include <unordered_map>

#include "primjit/error.h"

namespace primjit::text_internal {

const Form* find_form(std::string_view name) {
  static const std::unordered_map<std::string_view, const Form*> kTable = [] {
    std::unordered_map<std::string_view, const Form*> table;
    for (std::span<const Form> family : {expression_forms(), statement_forms(), buffer_forms()}) {
      for (const Form& form : family) {
        bool added = table.emplace(form.name, &form).second;
        PRIMJIT_ICHECK(added) << "T." << form.name << " has two entries in the form table";
      }
    }
    return table;
  }();
  auto it = kTable.find(name);
  return it != kTable.end() ? it->second : nullptr;
}

}  // namespace primjit::text_internal
