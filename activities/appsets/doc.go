// Package appsets holds the activity of the ApplicationSetWorkflow: one
// pass evaluates a set's generators and makes its apps match the result
// as the set's syncPolicy allows (create, update, delete), or deletes the
// set's apps when the set is deleted.
//
// A set owns the apps whose spec.managedBy.app is Owner(set name); it
// never changes an app it does not own. A set that cannot be evaluated
// (an invalid or duplicate app name, too many elements, a failing
// generator source, an app its project refuses, a name another owner
// holds) writes nothing: the pass answers the error for the set's status.
package appsets
