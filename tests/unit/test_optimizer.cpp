// Optimizer passes: each pass alone on hand-built plans (shape and golden text), the schema check,
// and results with and without optimization.
#include <gtest/gtest.h>

#include <map>

#include "test_util.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/memory/memory_resource.hpp"
#include "tug/plan/lower.hpp"
#include "tug/plan/optimizer.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;

namespace {

// a: i64, b: bool, c: str, d: f64 with `n` rows (nulls sprinkled in).
data_frame abcd(int64_t n = 12) {
  std::vector<std::optional<int64_t>> a;
  std::vector<std::optional<bool>> b;
  std::vector<std::optional<std::string>> c;
  std::vector<std::optional<double>> d;
  for (int64_t i = 0; i < n; ++i) {
    a.push_back(i % 5 == 4 ? std::nullopt : std::optional<int64_t>(i));
    b.push_back(i % 7 == 6 ? std::nullopt : std::optional<bool>(i % 3 != 0));
    c.push_back("s" + std::to_string(i % 4));
    d.push_back(0.5 * static_cast<double>(i));
  }
  return data_frame::from_columns({{"a", i64(a)}, {"b", boolean(b)}, {"c", str(c)}, {"d", f64(d)}});
}

plan_ptr scan(int64_t n = 12) { return abcd(n).lazy().plan(); }

// Node kinds in pre-order.
void kinds_of(const plan_ptr& p, std::vector<plan_kind>& out) {
  out.push_back(p->kind);
  for (auto& i : p->inputs)
    kinds_of(i, out);
}
std::vector<plan_kind> kinds(const plan_ptr& p) {
  std::vector<plan_kind> out;
  kinds_of(p, out);
  return out;
}

// First node of `kind` in pre-order (nullptr when none).
const plan_node* find(const plan_ptr& p, plan_kind kind) {
  if (p->kind == kind) return p.get();
  for (auto& i : p->inputs)
    if (auto r = find(i, kind)) return r;
  return nullptr;
}

std::vector<std::string> predicate_text(const plan_node* scan_node) {
  std::vector<std::string> out;
  for (auto& e : scan_node->predicates)
    out.push_back(to_string(e));
  return out;
}

// Executes `p` as it is (no optimization).
data_frame execute(const plan_ptr& p, const engine_options& opts) { return run_plan(p, opts).frame; }

// Runs `p` with and without optimization (many partitions) and expects the same rows (in order
// unless `any_order`).
void expect_same_results(const plan_ptr& p, bool any_order = false) {
  engine_options o;
  o.target_partition_rows = 7;
  data_frame plain = execute(p, o);
  data_frame opt = execute(optimize(p), o);
  if (any_order) {
    EXPECT_EQ(opt.schema(), plain.schema());
    EXPECT_EQ(sorted_rows(opt), sorted_rows(plain));
  } else {
    expect_frames_equal(opt, plain);
  }
}

}  // namespace

TEST(Optimizer, PassesInOrder) {
  std::vector<std::string> names;
  for (auto& p : optimizer_passes())
    names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"constant_folding", "predicate_pushdown", "projection_pushdown",
                                             "slice_pushdown", "common_subplan", "late_materialization"}));
}

TEST(Optimizer, SchemaCheckNamesTheBrokenPass) {
  plan_ptr p = plan::select(scan(), {col("a"), col("b")});
  std::vector<optimizer_pass> broken = {
      {"drop_a_column", &optimizer_flags::constant_folding,
       [](const plan_ptr& x) { return plan::select(x, {col("a")}); }},
  };
  try {
    optimize(p, broken);
    FAIL() << "expected internal_error";
  } catch (const internal_error& e) {
    EXPECT_NE(std::string(e.what()).find("drop_a_column"), std::string::npos) << e.what();
  }
  // disabled by its flag, or with the check off, the pass runs silently
  optimizer_flags off;
  off.constant_folding = false;
  EXPECT_EQ(optimize(p, broken, off), p);
  EXPECT_EQ(optimize(p, broken, {}, false)->schema.size(), 1u);
}

TEST(ConstantFolding, BooleanIdentities) {
  expr b = col("b");
  EXPECT_TRUE(equal(passes::fold_expression(b & lit(true)), b));
  EXPECT_TRUE(equal(passes::fold_expression(lit(true) & b), b));
  EXPECT_TRUE(equal(passes::fold_expression(b | lit(false)), b));
  EXPECT_TRUE(equal(passes::fold_expression(b & lit(false)), lit(false).alias("b")));
  EXPECT_TRUE(equal(passes::fold_expression(b | lit(true)), lit(true).alias("b")));
  EXPECT_TRUE(equal(passes::fold_expression(!(!b)), b));
  EXPECT_TRUE(equal(passes::fold_expression((b & lit(true)).alias("x")), b.alias("x")));
  // nested: ((b | false) & true) & not(not(b2))
  expr nested = ((b | lit(false)) & lit(true)) & !(!col("b2"));
  EXPECT_EQ(to_string(passes::fold_expression(nested)), "[col(\"b\") & col(\"b2\")]");
  // x & null and x | null depend on x
  expr with_null = b & lit_null(type_id::boolean);
  EXPECT_EQ(passes::fold_expression(with_null).ptr(), with_null.ptr());
  // an aggregation or window is never dropped (it decides the row count)
  expr agg = col("b").any() & lit(false);
  EXPECT_EQ(passes::fold_expression(agg).ptr(), agg.ptr());
  expr win = col("b").any().over({"c"}) | lit(true);
  EXPECT_EQ(passes::fold_expression(win).ptr(), win.ptr());
}

TEST(ConstantFolding, KleeneNulls) {
  expr null_b = lit_null(type_id::boolean);
  auto folded = [](const expr& e) { return to_string(passes::fold_expression(e)); };
  auto is_bool_null = [](const expr& e) {
    return e->kind == expr_kind::literal && e->value.is_null() && e->value.type().id == type_id::boolean;
  };
  EXPECT_EQ(folded(null_b & lit(false)), "false");
  EXPECT_EQ(folded(lit(false) & null_b), "false");
  EXPECT_EQ(folded(null_b | lit(true)), "true");
  EXPECT_EQ(folded(lit(true) & lit(true)), "true");
  EXPECT_EQ(folded(lit(false) | lit(false)), "false");
  EXPECT_TRUE(is_bool_null(passes::fold_expression(null_b & lit(true))));
  EXPECT_TRUE(is_bool_null(passes::fold_expression(null_b | lit(false))));
  EXPECT_TRUE(is_bool_null(passes::fold_expression(!null_b)));
  EXPECT_EQ(folded(!lit(true)), "false");
  // an untyped null (int64) in Kleene logic is a boolean null
  EXPECT_TRUE(is_bool_null(passes::fold_expression(lit_null(type_id::int64) & lit(true))));
}

TEST(ConstantFolding, LiteralArithmeticFoldsOrStays) {
  // folded by the cpu evaluator where it implements the function, else left as it is
  expr e = lit(int64_t{1}) + lit(int64_t{2});
  expr f = passes::fold_expression(e);
  if (f->kind == expr_kind::literal) {
    EXPECT_EQ(f->value.as_int64(), 3);
    EXPECT_EQ(f->value.type().id, type_id::int64);
    EXPECT_FALSE(f->dynamic);
  } else {
    EXPECT_EQ(f.ptr(), e.ptr());
  }
  // a column keeps the expression unfolded
  expr g = col("a") + lit(int64_t{2});
  EXPECT_EQ(passes::fold_expression(g).ptr(), g.ptr());
  // a failing strict cast is left for the query to report
  expr bad = lit("x").cast(type_id::int64);
  EXPECT_NO_THROW(passes::fold_expression(bad));
}

TEST(ConstantFolding, Filters) {
  plan_ptr s = scan();
  EXPECT_EQ(passes::constant_folding(plan::filter(s, lit(true))), s);
  EXPECT_EQ(passes::constant_folding(plan::filter(s, col("b") | lit(true))), s);
  for (expr never : {lit(false), col("b") & lit(false), lit_null(type_id::boolean)}) {
    plan_ptr f = passes::constant_folding(plan::filter(s, never));
    ASSERT_EQ(f->kind, plan_kind::slice) << to_string(never);
    EXPECT_EQ(f->offset, 0);
    EXPECT_EQ(f->length, 0);
    EXPECT_EQ(f->inputs[0], s);
    EXPECT_EQ(f->schema, s->schema);
  }
  plan_ptr kept = passes::constant_folding(plan::filter(s, col("b") & lit(true)));
  EXPECT_EQ(to_string(kept), "FILTER col(\"b\")\n  DF; 4 columns, 12 rows in 1 partitions\n");
  // unchanged plans keep their nodes
  plan_ptr plain = plan::select(plan::filter(s, col("b")), {col("a")});
  EXPECT_EQ(passes::constant_folding(plain), plain);
}

TEST(ConstantFolding, KeepsOutputNames) {
  plan_ptr p = plan::select(scan(), {col("b") & lit(false), lit(true) & col("b").alias("bb")});
  plan_ptr f = passes::constant_folding(p);
  EXPECT_EQ(f->schema, p->schema);
  EXPECT_EQ(to_string(f),
            "SELECT [false.alias(\"b\"), col(\"b\").alias(\"bb\")]\n  DF; 4 columns, 12 rows in 1 partitions\n");
}

TEST(PredicatePushdown, ThroughSelectRenameIntoScan) {
  plan_ptr p = plan::filter(plan::select(scan(), {col("a"), col("b").alias("bb")}), col("bb"));
  plan_ptr r = passes::predicate_pushdown(p);
  EXPECT_EQ(to_string(r),
            "SELECT [col(\"a\"), col(\"b\").alias(\"bb\")]\n"
            "  DF; 4 columns, 12 rows in 1 partitions; selection: [col(\"b\")]\n");
}

TEST(PredicatePushdown, SplitsConjunctionsAndKeepsComputedColumns) {
  // x is computed, so its conjunct stays; b passes through with_columns and reaches the scan
  plan_ptr wc = plan::with_columns(scan(), {lit(true).alias("x"), col("c").alias("c2")});
  plan_ptr p = plan::filter(wc, col("x") & col("b") & col("c2").is_null());
  plan_ptr r = passes::predicate_pushdown(p);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::filter, plan_kind::with_columns, plan_kind::scan}));
  EXPECT_EQ(to_string(r->exprs[0]), "col(\"x\")");
  EXPECT_EQ(predicate_text(find(r, plan_kind::scan)), (std::vector<std::string>{"col(\"b\")", "col(\"c\").is_null()"}));
}

TEST(PredicatePushdown, StacksFiltersAndPassesSortUniqueConcat) {
  plan_ptr s1 = scan(), s2 = scan(5);
  plan_ptr u = plan::unique(plan::concat({s1, s2}), {"b"}, unique_keep::first, true);
  plan_ptr p = plan::filter(plan::filter(plan::sort(u, {col("a")}, {}, {}, false), col("b")), col("b").not_());
  plan_ptr r = passes::predicate_pushdown(p);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::sort, plan_kind::unique, plan_kind::concat, plan_kind::scan,
                                              plan_kind::scan}));
  for (auto& in : find(r, plan_kind::concat)->inputs)
    EXPECT_EQ(predicate_text(in.get()), (std::vector<std::string>{"col(\"b\")", "col(\"b\").not()"}));
}

TEST(PredicatePushdown, UniqueOnlyOnSubsetColumns) {
  plan_ptr p = plan::filter(plan::unique(scan(), {"a"}, unique_keep::first, false), col("b"));
  EXPECT_EQ(kinds(passes::predicate_pushdown(p)),
            (std::vector<plan_kind>{plan_kind::filter, plan_kind::unique, plan_kind::scan}));
}

TEST(PredicatePushdown, StopsAtSliceRowIndexWindowAndTopK) {
  plan_ptr s = scan();
  auto unchanged = [](const plan_ptr& p) { EXPECT_EQ(to_string(passes::predicate_pushdown(p)), to_string(p)); };
  plan_ptr sl = plan::filter(plan::slice(s, 1, 5), col("b"));
  unchanged(sl);
  plan_ptr ri = plan::filter(plan::with_row_index(s, "i", 0), col("b"));
  unchanged(ri);
  plan_ptr win = plan::filter(s, col("b") & col("b").any().over({"c"}));
  unchanged(win);
  // a filter above a window filter does not pass below it
  plan_ptr above = plan::filter(win, col("a").is_null());
  plan_ptr r = passes::predicate_pushdown(above);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::filter, plan_kind::filter, plan_kind::scan}));
  EXPECT_TRUE(find(r, plan_kind::scan)->predicates.empty());
  // windows in a projection stop it too
  plan_ptr wsel = plan::filter(plan::with_columns(s, {col("b").any().over({"c"}).alias("w")}), col("b"));
  unchanged(wsel);
  auto topk = std::make_shared<plan_node>(*plan::sort(s, {col("a")}, {}, {}, false));
  topk->length = 3;
  plan_ptr tk = plan::filter(topk, col("b"));
  unchanged(tk);
}

TEST(PredicatePushdown, Joins) {
  auto right =
      data_frame::from_columns({{"a", i64({1, 2})}, {"e", boolean({true, false})}, {"b", boolean({true, true})}})
          .lazy()
          .plan();
  plan_ptr l = scan();
  for (join_type how : {join_type::inner, join_type::left, join_type::right, join_type::full}) {
    plan_ptr j = plan::join(l, right, {col("a")}, {col("a")}, how);
    // b is the left's; b_right and e are the right's
    plan_ptr p = plan::filter(j, col("b") & col("e") & col("b_right") & (col("b") | col("e")));
    plan_ptr r = passes::predicate_pushdown(p);
    const plan_node* jn = find(r, plan_kind::join);
    ASSERT_NE(jn, nullptr);
    auto lp = predicate_text(jn->inputs[0].get());
    auto rp = predicate_text(jn->inputs[1].get());
    bool left_ok = how == join_type::inner || how == join_type::left;
    bool right_ok = how == join_type::inner || how == join_type::right;
    EXPECT_EQ(lp, left_ok ? std::vector<std::string>{"col(\"b\")"} : std::vector<std::string>{}) << to_string(how);
    EXPECT_EQ(rp, right_ok ? (std::vector<std::string>{"col(\"e\")", "col(\"b\")"}) : std::vector<std::string>{})
        << to_string(how);
    // the mixed conjunct always stays above the join
    ASSERT_EQ(r->kind, plan_kind::filter) << to_string(how);
    EXPECT_NE(to_string(r->exprs[0]).find("[col(\"b\") | col(\"e\")]"), std::string::npos);
  }
  // semi: left conjuncts go left, right side untouched
  plan_ptr semi = plan::filter(plan::join(l, right, {col("a")}, {col("a")}, join_type::semi), col("b"));
  plan_ptr r = passes::predicate_pushdown(semi);
  EXPECT_EQ(r->kind, plan_kind::join);
  EXPECT_EQ(predicate_text(r->inputs[0].get()), std::vector<std::string>{"col(\"b\")"});
  EXPECT_EQ(r->inputs[1], right);
}

// A disjunction over both sides (PDS-H Q19's shape) implies a disjunction on each side, pushed down
// too; the whole predicate stays above, and the results do not change.
TEST(PredicatePushdown, DisjunctionOverBothSidesImpliesOneOnEach) {
  auto right = data_frame::from_columns({{"a", i64({0, 1, 2, 3, 5, 6, 7, 8})},
                                         {"e", boolean({true, false, std::nullopt, true, false, true, false, true})},
                                         {"f", i64({1, 2, 3, 4, 5, 6, 7, std::nullopt})}})
                   .lazy()
                   .plan();
  plan_ptr l = scan(40);
  expr where = (col("b") & (col("d") > lit(2.0)) & col("e")) | ((col("c") == lit("s1")) & (col("f") > lit(int64_t{4})));
  for (join_type how : {join_type::inner, join_type::left, join_type::right, join_type::full}) {
    plan_ptr p = plan::filter(plan::join(l, right, {col("a")}, {col("a")}, how), where);
    plan_ptr r = passes::predicate_pushdown(p);
    const plan_node* jn = find(r, plan_kind::join);
    ASSERT_NE(jn, nullptr);
    bool left_ok = how == join_type::inner || how == join_type::left;
    bool right_ok = how == join_type::inner || how == join_type::right;
    EXPECT_EQ(predicate_text(jn->inputs[0].get()),
              left_ok ? std::vector<std::string>{"[[col(\"b\") & [col(\"d\") > 2.0]] | [col(\"c\") == \"s1\"]]"}
                      : std::vector<std::string>{})
        << to_string(how);
    EXPECT_EQ(predicate_text(jn->inputs[1].get()),
              right_ok ? std::vector<std::string>{"[col(\"e\") | [col(\"f\") > 4]]"} : std::vector<std::string>{})
        << to_string(how);
    ASSERT_EQ(r->kind, plan_kind::filter) << to_string(how);  // the whole predicate stays above
    expect_same_results(p, true);
  }
  // a branch that says nothing about a side: nothing is implied there
  expr half = (col("b") & col("e")) | (col("f") > lit(int64_t{4}));
  plan_ptr r =
      passes::predicate_pushdown(plan::filter(plan::join(l, right, {col("a")}, {col("a")}, join_type::inner), half));
  const plan_node* jn = find(r, plan_kind::join);
  ASSERT_NE(jn, nullptr);
  EXPECT_EQ(predicate_text(jn->inputs[0].get()), std::vector<std::string>{});
  EXPECT_EQ(predicate_text(jn->inputs[1].get()), std::vector<std::string>{"[col(\"e\") | [col(\"f\") > 4]]"});
}

TEST(PredicatePushdown, GroupByKeysOnly) {
  plan_ptr g = plan::group_by(scan(), {col("b"), col("c")}, {col("a").sum()});
  plan_ptr p = plan::filter(g, col("b") & col("a").is_null());
  plan_ptr r = passes::predicate_pushdown(p);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::filter, plan_kind::group_by, plan_kind::scan}));
  EXPECT_EQ(to_string(r->exprs[0]), "col(\"a\").is_null()");
  EXPECT_EQ(predicate_text(find(r, plan_kind::scan)), std::vector<std::string>{"col(\"b\")"});
}

TEST(PredicatePushdown, SharedSubplanStaysShared) {
  plan_ptr base = plan::select(scan(), {col("a"), col("b")});
  plan_ptr p = plan::concat({plan::filter(base, col("b")), base});
  plan_ptr r = passes::predicate_pushdown(p);
  EXPECT_EQ(r->inputs[1], base);
  ASSERT_EQ(r->inputs[0]->kind, plan_kind::filter);
  EXPECT_EQ(r->inputs[0]->inputs[0], base);
}

TEST(ProjectionPushdown, ScanReadsOnlyNeededColumns) {
  plan_ptr p = plan::select(plan::filter(scan(), col("b")), {col("a").alias("x")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(r->schema, p->schema);
  const plan_node* s = find(r, plan_kind::scan);
  EXPECT_EQ(s->projection, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(to_string(r),
            "SELECT [col(\"a\").alias(\"x\")]\n"
            "  FILTER col(\"b\")\n"
            "    DF; 4 columns, 12 rows in 1 partitions; project 2/4 columns [a, b]\n");
}

TEST(ProjectionPushdown, PushedPredicateColumnsAreReadNotOutput) {
  plan_ptr p = plan::select(plan::filter(scan(), col("b")), {col("d")});
  plan_ptr r = passes::projection_pushdown(passes::predicate_pushdown(p));
  // the select of the only column left disappears
  EXPECT_EQ(to_string(r),
            "DF; 4 columns, 12 rows in 1 partitions; project 2/4 columns [b, d]; selection: [col(\"b\")]; "
            "output [d]\n");
}

TEST(ProjectionPushdown, PrunesExpressionsAggregationsAndRowIndex) {
  plan_ptr s = scan();
  plan_ptr wc =
      plan::with_columns(plan::with_row_index(s, "i", 0), {col("c").alias("c2"), lit(int64_t{1}).alias("one")});
  plan_ptr p = plan::select(wc, {col("one"), col("a")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(r->schema, p->schema);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::select, plan_kind::with_columns, plan_kind::scan}));
  EXPECT_EQ(find(r, plan_kind::with_columns)->exprs.size(), 1u);
  EXPECT_EQ(find(r, plan_kind::scan)->projection, std::vector<std::string>{"a"});

  plan_ptr g = plan::group_by(s, {col("c")}, {col("a").sum().alias("sa"), col("d").max().alias("md")});
  plan_ptr pg = plan::select(g, {col("md")});
  plan_ptr rg = passes::projection_pushdown(pg);
  EXPECT_EQ(rg->schema, pg->schema);
  EXPECT_EQ(find(rg, plan_kind::group_by)->exprs.size(), 1u);
  EXPECT_EQ(find(rg, plan_kind::scan)->projection, (std::vector<std::string>{"c", "d"}));
}

TEST(ProjectionPushdown, RootSchemaKeptWhenColumnsAreReplaced) {
  // with_columns replaces "a" by a literal: "a" is no longer read, the root select restores the order
  plan_ptr p = plan::with_columns(scan(), {lit(int64_t{7}).alias("a")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(r->schema, p->schema);
  EXPECT_EQ(find(r, plan_kind::scan)->projection, (std::vector<std::string>{"b", "c", "d"}));
}

TEST(ProjectionPushdown, KeepsOneColumnForTheRowCount) {
  plan_ptr p = plan::select(scan(), {lit(int64_t{1}).alias("one")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(find(r, plan_kind::scan)->projection, std::vector<std::string>{"a"});
}

TEST(ProjectionPushdown, JoinsKeepKeysAndSuffixes) {
  auto right = data_frame::from_columns({{"a", i64({1})}, {"d", f64({1})}, {"z", i64({1})}}).lazy().plan();
  plan_ptr j = plan::join(scan(), right, {col("a")}, {col("a")}, join_type::inner);
  plan_ptr p = plan::select(j, {col("d_right")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(r->schema, p->schema);
  const plan_node* jn = find(r, plan_kind::join);
  // the left "d" stays so that the right one is still called d_right
  EXPECT_EQ(jn->inputs[0]->schema.names(), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(jn->inputs[1]->schema.names(), (std::vector<std::string>{"a", "d"}));
}

TEST(ProjectionPushdown, ConcatInputsGetEqualSchemas) {
  plan_ptr a = plan::with_columns(scan(), {col("c").alias("a")});  // a from c: "a" is not read here
  plan_ptr p =
      plan::select(plan::concat({a, plan::with_columns(scan(3), {col("c").alias("a")})}), {col("a"), col("d")});
  plan_ptr r = passes::projection_pushdown(p);
  EXPECT_EQ(r->schema, p->schema);
  const plan_node* c = find(r, plan_kind::concat);
  for (auto& in : c->inputs)
    EXPECT_EQ(in->schema.names(), (std::vector<std::string>{"a", "d"}));
}

TEST(ProjectionPushdown, SharedSubplanGetsTheUnionOfNeeds) {
  plan_ptr base = scan();
  plan_ptr p = plan::concat({plan::select(base, {col("a")}), plan::select(plan::filter(base, col("b")), {col("a")})});
  plan_ptr r = passes::projection_pushdown(p);
  const plan_node* c = find(r, plan_kind::concat);
  EXPECT_EQ(c->inputs[0]->inputs[0].get(), find(c->inputs[1], plan_kind::scan));
  EXPECT_EQ(c->inputs[0]->inputs[0]->projection, (std::vector<std::string>{"a", "b"}));
}

TEST(SlicePushdown, TopKOnSort) {
  plan_ptr s = plan::sort(scan(), {col("a")}, {true}, {}, false);
  plan_ptr p = plan::slice(plan::select(s, {col("a"), col("c")}), 2, 3);
  plan_ptr r = passes::slice_pushdown(p);
  EXPECT_EQ(kinds(r), (std::vector<plan_kind>{plan_kind::slice, plan_kind::select, plan_kind::sort, plan_kind::scan}));
  EXPECT_EQ(find(r, plan_kind::sort)->length, 5);
  EXPECT_EQ(to_string(r),
            "SLICE offset 2 len 3\n"
            "  SELECT [col(\"a\"), col(\"c\")]\n"
            "    SORT BY [col(\"a\")] descending [true]; top-k 5\n"
            "      DF; 4 columns, 12 rows in 1 partitions\n");
  // with_inputs keeps the top-k
  EXPECT_EQ(plan::with_inputs(*find(r, plan_kind::sort), {scan()})->length, 5);
}

TEST(SlicePushdown, StopsWhereRowsAreNotKnown) {
  plan_ptr s = plan::sort(scan(), {col("a")}, {}, {}, false);
  for (plan_ptr p : {plan::slice(s, -3, 3), plan::slice(plan::filter(s, col("b")), 0, 3),
                     plan::slice(plan::with_columns(s, {col("a").sum()}), 0, 3),
                     plan::slice(plan::unique(s, {}, unique_keep::any, false), 0, 2)})
    EXPECT_EQ(passes::slice_pushdown(p), p);
}

TEST(SlicePushdown, NestedSlicesAndConcat) {
  plan_ptr s = plan::sort(scan(), {col("a")}, {}, {}, false);
  plan_ptr r = passes::slice_pushdown(plan::slice(plan::slice(s, 4, 10), 1, 2));
  EXPECT_EQ(find(r, plan_kind::sort)->length, 7);
  plan_ptr c = passes::slice_pushdown(plan::slice(plan::concat({s, scan()}), 0, 3));
  const plan_node* cn = find(c, plan_kind::concat);
  for (auto& in : cn->inputs) {
    EXPECT_EQ(in->kind, plan_kind::slice);
    EXPECT_EQ(in->length, 3);
  }
  EXPECT_EQ(find(c, plan_kind::sort)->length, 3);
  EXPECT_EQ(to_string(passes::slice_pushdown(c)), to_string(c));  // idempotent
}

TEST(CommonSubplan, EqualSubtreesShareOneNode) {
  plan_ptr s = scan();
  auto make = [&](int64_t v) { return plan::filter(plan::with_columns(s, {lit(v).alias("x")}), col("b")); };
  plan_ptr p = plan::concat({make(1), make(1), make(2)});
  plan_ptr r = passes::common_subplan(p);
  EXPECT_EQ(r->schema, p->schema);
  EXPECT_EQ(r->inputs[0], r->inputs[1]);
  EXPECT_NE(r->inputs[0], r->inputs[2]);
  EXPECT_EQ(r->inputs[2]->inputs[0]->inputs[0], s);
  EXPECT_EQ(to_string(r),
            "UNION\n"
            "  FILTER col(\"b\")  [shared #1]\n"
            "    WITH_COLUMNS [1.alias(\"x\")]\n"
            "      DF; 4 columns, 12 rows in 1 partitions  [shared #2]\n"
            "  SHARED #1 (executed once, see above)\n"
            "  FILTER col(\"b\")\n"
            "    WITH_COLUMNS [2.alias(\"x\")]\n"
            "      SHARED #2 (executed once, see above)\n");
  // structurally different scans of different sources stay apart
  plan_ptr q = plan::concat({scan(), scan()});
  plan_ptr rq = passes::common_subplan(q);
  EXPECT_NE(rq->inputs[0], rq->inputs[1]);
}

TEST(CommonSubplan, GroupByJoinTwinSharesTheInput) {
  auto lf = abcd(40).lazy().with_columns({col("a").alias("k")});
  auto twin = lf.join(lf.group_by({"c"}).agg({col("d").mean().alias("md")}), {"c"});
  plan_ptr r = optimize(twin.plan());
  const plan_node* j = find(r, plan_kind::join);
  ASSERT_NE(j, nullptr);
  const plan_node* g = find(j->inputs[1], plan_kind::group_by);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(j->inputs[0], g->inputs[0]);
  EXPECT_NE(to_string(r).find("SHARED #1"), std::string::npos) << to_string(r);
}

TEST(OptimizerEndToEnd, SameResultsWithAndWithoutOptimization) {
  auto df = abcd(100);
  auto lf = df.lazy();
  auto lf2 = abcd(33).lazy();
  std::vector<lazy_frame> queries = {
      concat({lf, lf2}).filter(col("b")).select({col("a"), col("c")}).slice(3, 10),
      lf.with_columns({lit(int64_t{5}).alias("x"), col("a").alias("a2")})
          .filter(col("b"))
          .select({col("a2"), col("x")}),
      lf.with_row_index("i", 3).filter(col("b")).slice(2, 5),
      lf.select({col("a"), col("b").alias("bb")}).filter(col("bb")).head(4),
      lf.filter(lit(false)).select({col("c")}),
      lf.filter(lit(true)).select({lit(int64_t{1}).alias("one")}),
      concat({lf, lf}).filter(col("b")).with_row_index("i").select({col("d"), col("i")}).tail(7),
      lf.drop({"a", "b"}).rename({{"c", "cc"}}).slice(95, 20),
      concat({lf.select({col("a")}), lf.select({col("a")})}).slice(0, 150),
  };
  for (size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE("query " + std::to_string(i) + "\n" + to_string(queries[i].plan()));
    expect_same_results(queries[i].plan());
    EXPECT_NO_THROW(queries[i].explain());
  }
  // the earlier passes' plan (late materialization would move `a` out of the scan: its own tests)
  optimizer_flags no_late;
  no_late.late_materialization = false;
  std::string text = "optimized logical plan:\n" +
                     to_string(optimize(concat({lf, lf2}).filter(col("b")).select({col("a")}).head(3).plan(), no_late));
  EXPECT_NE(text.find("optimized logical plan:\n"
                      "SLICE offset 0 len 3\n"
                      "  UNION\n"
                      "    SLICE offset 0 len 3\n"
                      "      DF; 4 columns, 100 rows in 1 partitions; project 2/4 columns [a, b]; selection: "
                      "[col(\"b\")]; output [a]\n"),
            std::string::npos)
      << text;
  // the empty result keeps its schema
  auto empty = lf.filter(lit(false)).collect();
  EXPECT_EQ(empty.schema(), lf.schema());
  EXPECT_EQ(empty.to_table().num_rows(), 0);
}

// Boolean logic the cpu evaluator does not run yet on this branch: once folded, it runs as the
// simplified query does.
TEST(OptimizerEndToEnd, FoldedLogicRunsAsItsSimplification) {
  auto lf = abcd(50).lazy();
  engine_options o;
  o.target_partition_rows = 7;
  std::vector<std::pair<lazy_frame, lazy_frame>> cases = {
      {lf.select({col("a"), col("b").alias("bb")}).filter(col("bb") & lit(true)).head(4),
       lf.select({col("a"), col("b").alias("bb")}).filter(col("bb")).head(4)},
      {lf.filter(col("b") | lit(true)).select({col("c")}), lf.select({col("c")})},
      {lf.filter(!(!col("b"))).with_row_index("i"), lf.filter(col("b")).with_row_index("i")},
      {lf.filter(col("b") & lit(false)), lf.slice(0, 0)},
      {lf.select({col("b") | lit(false), (col("b") & lit(false)).alias("f")}),
       lf.select({col("b"), lit(false).alias("f")})},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    expect_frames_equal(cases[i].first.collect(o), execute(cases[i].second.plan(), o));
  }
}

// Optimized and unoptimized plans agree on queries with comparisons, sort, join and group_by.
TEST(OptimizerEndToEnd, ComparisonsSortJoinGroupBy) {
  auto lf = abcd(100).lazy();
  auto right = abcd(20).lazy().select({col("a"), col("d").alias("rd")});
  std::vector<lazy_frame> queries = {
      lf.filter(col("a") > lit(int64_t{3}) + lit(int64_t{4})).select({col("a")}),
      lf.sort("d", true).head(5),
      lf.join(right, {"a"}).filter(col("rd") > 1.0 & col("b")).select({col("c"), col("rd")}),
      lf.join(right, {"a"}, join_type::left).filter(col("rd").is_null()),
      lf.join(lf.group_by({"c"}).agg({col("d").mean().alias("md")}), {"c"}).filter(col("d") > col("md")),
      lf.group_by({"c"}).agg({col("a").sum()}).filter(col("c") == "s1"),
  };
  // the optimizer itself works on them today
  EXPECT_EQ(find(optimize(queries[1].plan()), plan_kind::sort)->length, 5);
  optimizer_flags no_late;  // late materialization would move the scan's predicate into a filter
  no_late.late_materialization = false;
  plan_ptr q2 = optimize(queries[2].plan(), no_late);
  const plan_node* j = find(q2, plan_kind::join);
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(predicate_text(j->inputs[0].get()), std::vector<std::string>{"col(\"b\")"});
  EXPECT_EQ(j->inputs[1]->kind, plan_kind::select);
  EXPECT_EQ(kinds(optimize(queries[3].plan(), no_late))[0], plan_kind::filter);  // not into the left join's right side
  for (size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE("query " + std::to_string(i));
    expect_same_results(queries[i].plan(), true);
  }
}
