// Placeholders rendered into `program.args.command` (which the reference worker runs with
// /bin/sh) are quoted for where they stand, so an event's values never become code.
#include <gtest/gtest.h>

#include <string>

#include "core/arg_template.h"

namespace trigd {
namespace {

using json = nlohmann::json;

TemplateValues Values() {
  TemplateValues v;
  v.run_id = "run-1";
  v.partition_items = {"dt=1; touch pwned", "x'; touch pwned2; echo '"};
  v.key_items = {"$(touch pwned3)", "`touch pwned4`", "a\"b\nc"};
  v.partitions = v.partition_items[0] + " " + v.partition_items[1];
  v.keys = v.key_items[0] + " " + v.key_items[1] + " " + v.key_items[2];
  return v;
}

TEST(ShellCommand, AnUnquotedListGivesOneSingleQuotedWordPerItem) {
  EXPECT_EQ(RenderShellCommand("echo a {{partitions}}", Values()),
            R"(echo a 'dt=1; touch pwned' 'x'\''; touch pwned2; echo '\''')");
  EXPECT_EQ(RenderShellCommand("echo {{ keys }}", Values()), "echo '$(touch pwned3)' '`touch pwned4`' 'a\"b\nc'");
}

TEST(ShellCommand, APlaceholderInsideSingleQuotesCannotCloseThem) {
  EXPECT_EQ(RenderShellCommand("echo '{{partitions}}'", Values()),
            R"(echo 'dt=1; touch pwned x'\''; touch pwned2; echo '\''')");
}

TEST(ShellCommand, APlaceholderInsideDoubleQuotesCannotExpand) {
  EXPECT_EQ(RenderShellCommand("echo \"{{keys}}\"", Values()),
            "echo \"\\$(touch pwned3) \\`touch pwned4\\` a\\\"b\nc\"");
}

TEST(ShellCommand, QuotesOfTheTemplateAreFollowedAcrossPlaceholders) {
  // An escaped quote opens nothing; a closed quote leaves the next placeholder outside.
  EXPECT_EQ(RenderShellCommand(R"(echo \' {{run_id}} 'a' {{run_id}} "b '{{run_id}}'")", Values()),
            R"(echo \' 'run-1' 'a' 'run-1' "b 'run-1'")");
}

TEST(ShellCommand, EmptyValues) {
  TemplateValues empty;
  // An empty list gives no word, as it rendered before; an empty value one empty word.
  EXPECT_EQ(RenderShellCommand("load {{partitions}} --date {{fire_date}}", empty), "load  --date ''");
}

TEST(ShellCommand, OnlyTheCommandIsRenderedForTheShell) {
  const json args = {{"command", "echo {{keys}}"}, {"note", "echo {{keys}}"}};
  const json rendered = RenderArgs(args, Values());
  EXPECT_EQ(rendered["command"], "echo '$(touch pwned3)' '`touch pwned4`' 'a\"b\nc'");
  EXPECT_EQ(rendered["note"], "echo " + Values().keys);
}

TEST(ShellCommand, ShellQuoteWritesEachQuoteOutsideTheQuotes) {
  EXPECT_EQ(ShellQuote("it's"), R"('it'\''s')");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace trigd
