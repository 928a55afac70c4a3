"""Starting points that work as written: `agent-env init bundle|env|task` (`starters`, files
from `templates/{bundle,env,task,agent}`) and `agent-env plugin new` (`plugin`, files from
`templates/plugin`). `commands` holds the click commands, `hooks` registers them."""
