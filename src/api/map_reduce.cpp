// MapRed-style jobs (include/tug/api/map_reduce.hpp) as user kernels.
#include "tug/api/map_reduce.hpp"

namespace tug {

user_kernel map_reduce_kernel(std::string name, std::function<std::unique_ptr<map_reduce_job>()> make,
                              std::vector<std::string> inputs) {
  if (!make) throw invalid_argument_error("map_reduce_kernel \"" + name + "\": the job factory is empty");
  user_kernel k(std::move(name));
  k.inputs(std::move(inputs))
      .outputs(schema({{"key", type_id::string}, {"value", type_id::string}}))
      .host([make = std::move(make)](kernel_partition& p) {
        std::unique_ptr<map_reduce_job> job = make();
        if (!job) throw invalid_argument_error(p.where_text() + ": the job factory returned no job");
        job->process_input(p);
        std::map<std::string, std::string> out;
        job->compute(out);
        string_builder keys(static_cast<int64_t>(out.size()), 0, p.memory());
        string_builder values(static_cast<int64_t>(out.size()), 0, p.memory());
        for (auto& [key, value] : out) {
          keys.append(key);
          values.append(value);
        }
        p.set_output(0, keys.finish());
        p.set_output(1, values.finish());
      });
  return k;
}

}  // namespace tug
