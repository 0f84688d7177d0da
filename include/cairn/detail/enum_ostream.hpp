// cairn::detail — operator<< for cairn's enums, so that test frameworks (Catch2, GoogleTest) and logs print their
// names ("achieved") rather than their numbers ("2").
//
// CAIRN_DETAIL_ENUM_OSTREAM(E), written in E's namespace beside `to_string(E)`, defines
// `operator<<(std::basic_ostream<Ch, Tr>&, E)` printing to_string(value). It is a template on the stream, so only
// <iosfwd> is needed here: the body is compiled where it is used, where the caller has <ostream> already. Catch2's
// StringMaker and GoogleTest's universal printer find it by argument-dependent lookup.
#pragma once

#include <iosfwd>

#define CAIRN_DETAIL_ENUM_OSTREAM(E)                                                                    \
  template <class CairnCh, class CairnTr>                                                               \
  std::basic_ostream<CairnCh, CairnTr>& operator<<(std::basic_ostream<CairnCh, CairnTr>& os, E value) { \
    return os << to_string(value);                                                                      \
  }
